// SPDX-License-Identifier: LGPL-2.1-or-later
#include "rdmastream_cli/metrics_exporter.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>
#include <httplib.h>

#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>

#include <cerrno>
#include <cstring>

namespace rdmastream::cli {

struct MetricsExporter::Server {
    httplib::Server http;
    std::atomic<bool> done{false}; // listen_after_bind returned
};

namespace {

// Two workers: a second scraper is served while the first one's connection
// lingers. Each connection serves one request and closes (no keep-alive),
// and a silent client is dropped after a second, so that stopping waits
// about a second at most for a worker.
constexpr std::size_t kWorkers = 2;
constexpr time_t kTimeoutSeconds = 1;

std::string bind_error(const MetricsAddress& at, int err) {
    const std::string what = fmt::format("--metrics {}: cannot listen on {}:{}", at.given, at.host, at.port);
    switch (err) {
    case EADDRINUSE:
        return fmt::format("{}: the port is in use (another program, or another rdmasend/rdmarecv, listens "
                           "there): pick another port, or 0 for any free one",
                           what);
    case EADDRNOTAVAIL:
        return fmt::format("{}: {} is not an address of this machine: give one of its addresses, or 0.0.0.0 for "
                           "all of them",
                           what, at.host);
    case EACCES:
        return fmt::format("{}: ports below 1024 need root (or CAP_NET_BIND_SERVICE): pick a port above 1023",
                           what);
    default:
        return fmt::format("{}: {}", what, err != 0 ? std::strerror(err) : "the address cannot be bound");
    }
}

std::string url_of(const std::string& host, int port) {
    const bool v6 = host.find(':') != std::string::npos;
    return fmt::format("http://{}{}{}:{}/metrics", v6 ? "[" : "", host, v6 ? "]" : "", port);
}

} // namespace

MetricsExporter::MetricsExporter(const MetricsAddress& at, MetricsIdentity who)
    : who_(std::move(who)), server_(std::make_unique<Server>()) {
    board_.publish(); // the reader's first look finds a zero snapshot
    httplib::Server& http = server_->http;
    http.new_task_queue = [] { return new httplib::ThreadPool(kWorkers); };
    http.set_keep_alive_max_count(1);
    http.set_keep_alive_timeout(kTimeoutSeconds);
    http.set_read_timeout(kTimeoutSeconds);
    http.set_write_timeout(kTimeoutSeconds);
    http.set_payload_max_length(1 << 16); // a scrape has no body
    // SO_REUSEADDR only: a restarted program rebinds at once (past the old
    // connections' TIME_WAIT), but a second one on the same port is refused.
    // cpp-httplib's default adds SO_REUSEPORT, with which two programs
    // would share the port and each scrape would reach either at random.
    http.set_socket_options([](socket_t sock) {
        const int yes = 1;
        setsockopt(sock, SOL_SOCKET, SO_REUSEADDR, &yes, sizeof yes);
    });
    http.Get("/metrics", [this](const httplib::Request& req, httplib::Response& res) {
        const MetricsFormat f = metrics_format_for(req.get_header_value("Accept"));
        res.set_content(render(f), metrics_content_type(f));
    });
    errno = 0;
    int port = at.port;
    if (at.port == 0) {
        port = http.bind_to_any_port(at.host);
        if (port < 0) throw UserError(bind_error(at, errno));
    } else if (!http.bind_to_port(at.host, at.port)) {
        throw UserError(bind_error(at, errno));
    }
    url_ = url_of(at.host, port);
    // The HTTP threads (this one and the pool it starts) take no signal:
    // Ctrl-C must reach the stream's thread, whose handler ends the stream.
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_BLOCK, &all, &old);
    thread_ = std::thread([s = server_.get()] {
        s->http.listen_after_bind();
        s->done = true;
    });
    pthread_sigmask(SIG_SETMASK, &old, nullptr);
    // stop() before the loop runs would be lost, and the loop would never end.
    while (!server_->http.is_running() && !server_->done) std::this_thread::sleep_for(std::chrono::milliseconds(1));
}

MetricsExporter::~MetricsExporter() {
    server_->http.stop();
    thread_.join();
}

void MetricsExporter::publish(const StreamStats& s, const FrameCounters& c, bool connected, bool fanout,
                              std::span<const PeerReport> receivers) {
    const std::vector<PathReport> paths = paths_ ? paths_() : std::vector<PathReport>{};
    fill_snapshot(board_.back(), s, c, connected, fanout, receivers, paths);
    board_.publish();
}

std::string MetricsExporter::render(MetricsFormat f) {
    const std::lock_guard lock(readers_);
    return render_metrics(board_.latest(), who_, f);
}

} // namespace rdmastream::cli
