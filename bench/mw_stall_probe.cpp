// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmastream-mw-stall-probe: does this device complete a local work request
// (IBV_WR_BIND_MW, IBV_WR_LOCAL_INV) that sits in a send queue behind a SEND
// the wire made it retransmit? (docs/security.md, "Why they are not the
// default".) Plain verbs and rdma_cm, no transport.
//
// Two processes, one RC connection (rdma_cm; ack timeout 16, retry count 6,
// as the transport's defaults). The listener plays rdmastream's receiver:
// per round it binds a type 2 window over a slot (unsignalled), sends a
// small message (signalled: a credit) and invalidates the window (signalled),
// several rounds in flight. The connecting side only receives the messages.
// Put a lossy wire between them (tc netem on the guests' eth0) and watch the
// listener's send queue.
//
//   --listen PORT              the side that binds, sends and invalidates
//   --connect ADDR:PORT        the side that receives (retries until listened)
//   --mode mw                  BIND + SEND + LOCAL_INV per round (the stream's)
//          send                SEND only, no window (the stream without windows)
//          mw-serial           as mw, but no local work request is posted while
//                              a SEND of this queue pair is unacknowledged (a
//                              workaround: it waits for each SEND's completion)
//   --batch N                  rounds posted together: N x (BIND + SEND), then
//                              N x LOCAL_INV (1: the brief order; 8: the credits
//                              of a stream's start, back to back)
//   --rounds N, --stall-ms MS  how many rounds; how long a posted work request
//                              may go without a completion (default 5000)
//
// Listener's exit: 0 every work request completed; 1 a completion never came
// within --stall-ms (the line says which, and what had completed) or came with
// an error status; 2 bad usage. The receiving side: 0 when every message
// arrived, 1 otherwise.
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>
#include <rdma/rdma_verbs.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void fail_errno(const char* call, int err) {
    throw Failure(std::string(call) + " failed: " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}
void check_rc(int rc, const char* call) { // ibv_post_*: the errno is returned
    if (rc != 0) fail_errno(call, rc);
}
void check_errno(int rc, const char* call) { // rdma_*: -1 and errno
    if (rc != 0) fail_errno(call, errno);
}
template <typename T>
T* check_ptr(T* p, const char* call) {
    if (p == nullptr) fail_errno(call, errno);
    return p;
}

enum class Mode { mw, send, mw_serial };

struct Options {
    bool listen = false;
    std::string host;
    std::string port;
    Mode mode = Mode::mw;
    int rounds = 400;
    int batch = 1;
    int stall_ms = 5000;
};

constexpr int kWindows = 8;     // one per slot, as the stream's ring
constexpr std::size_t kSlot = 4096;
constexpr std::uint32_t kMessage = 16;
constexpr std::uint8_t kAckTimeout = 16; // ~268 ms per try, as the transport
constexpr std::uint8_t kRetryCount = 6;

// wr_id: round << 8 | kind.
enum Kind : std::uint8_t { kBind = 1, kSend = 2, kInv = 3, kRecv = 4 };
std::uint64_t wr_id(int round, Kind k) { return (static_cast<std::uint64_t>(round) << 8) | k; }
int wr_round(std::uint64_t id) { return static_cast<int>(id >> 8); }
Kind wr_kind(std::uint64_t id) { return static_cast<Kind>(id & 0xff); }
const char* kind_name(Kind k) {
    switch (k) {
    case kBind: return "IBV_WR_BIND_MW";
    case kSend: return "IBV_WR_SEND";
    case kInv: return "IBV_WR_LOCAL_INV";
    case kRecv: return "receive";
    }
    return "?";
}

struct AddrInfo {
    rdma_addrinfo* p = nullptr;
    AddrInfo(const std::string& host, const std::string& port, bool passive) {
        rdma_addrinfo hints{};
        hints.ai_port_space = RDMA_PS_TCP;
        if (passive) hints.ai_flags = RAI_PASSIVE;
        check_errno(rdma_getaddrinfo(host.empty() ? nullptr : host.c_str(), port.c_str(), &hints, &p),
                    "rdma_getaddrinfo");
    }
    ~AddrInfo() { rdma_freeaddrinfo(p); }
    AddrInfo(const AddrInfo&) = delete;
    AddrInfo& operator=(const AddrInfo&) = delete;
};

struct EpDeleter {
    void operator()(rdma_cm_id* id) const { rdma_destroy_ep(id); }
};
using Ep = std::unique_ptr<rdma_cm_id, EpDeleter>;
struct MrDeleter {
    void operator()(ibv_mr* mr) const { ibv_dereg_mr(mr); }
};
using Mr = std::unique_ptr<ibv_mr, MrDeleter>;
struct MwDeleter {
    void operator()(ibv_mw* mw) const { ibv_dealloc_mw(mw); }
};
using Mw = std::unique_ptr<ibv_mw, MwDeleter>;

ibv_qp_init_attr qp_attr() {
    ibv_qp_init_attr a{};
    a.qp_type = IBV_QPT_RC;
    a.cap.max_send_wr = 256;
    a.cap.max_recv_wr = 256;
    a.cap.max_send_sge = 1;
    a.cap.max_recv_sge = 1;
    a.cap.max_inline_data = kMessage;
    a.sq_sig_all = 0;
    return a;
}

struct PdDeleter {
    void operator()(ibv_pd* pd) const { ibv_dealloc_pd(pd); }
};
using Pd = std::unique_ptr<ibv_pd, PdDeleter>;
struct CqDeleter {
    void operator()(ibv_cq* cq) const { ibv_destroy_cq(cq); }
};
using Cq = std::unique_ptr<ibv_cq, CqDeleter>;
struct QpDeleter {
    void operator()(rdma_cm_id* id) const { rdma_destroy_qp(id); }
};

// The verbs objects of one connection, children after their parents (they
// die first): a PD, a send and a receive CQ, the id's QP.
struct Verbs {
    Pd pd;
    Cq send_cq, recv_cq;
    std::unique_ptr<rdma_cm_id, QpDeleter> qp;
    explicit Verbs(rdma_cm_id* id) {
        pd.reset(check_ptr(ibv_alloc_pd(id->verbs), "ibv_alloc_pd"));
        send_cq.reset(check_ptr(ibv_create_cq(id->verbs, 512, nullptr, nullptr, 0), "ibv_create_cq"));
        recv_cq.reset(check_ptr(ibv_create_cq(id->verbs, 512, nullptr, nullptr, 0), "ibv_create_cq"));
        ibv_qp_init_attr a = qp_attr();
        a.send_cq = send_cq.get();
        a.recv_cq = recv_cq.get();
        check_errno(rdma_create_qp(id, pd.get(), &a), "rdma_create_qp");
        qp.reset(id);
    }
};

void set_ack_timeout(rdma_cm_id* id) {
    std::uint8_t t = kAckTimeout;
    check_errno(rdma_set_option(id, RDMA_OPTION_ID, RDMA_OPTION_ID_ACK_TIMEOUT, &t, sizeof t),
                "rdma_set_option(ACK_TIMEOUT)");
}

rdma_conn_param conn_param() {
    rdma_conn_param p{};
    p.retry_count = kRetryCount;
    p.rnr_retry_count = 7;
    return p;
}

const char* qp_state_name(ibv_qp_state s) {
    switch (s) {
    case IBV_QPS_RESET: return "RESET";
    case IBV_QPS_INIT: return "INIT";
    case IBV_QPS_RTR: return "RTR";
    case IBV_QPS_RTS: return "RTS";
    case IBV_QPS_SQD: return "SQD";
    case IBV_QPS_SQE: return "SQE";
    case IBV_QPS_ERR: return "ERR";
    default: return "?";
    }
}

std::string qp_state(ibv_qp* qp) {
    ibv_qp_attr a{};
    ibv_qp_init_attr i{};
    if (ibv_query_qp(qp, &a, IBV_QP_STATE, &i) != 0) return std::string("unknown (ibv_query_qp: ") + std::strerror(errno) + ")";
    return qp_state_name(a.qp_state);
}

// The listener's send queue: what was posted, what completed, in order.
class SendSide {
public:
    SendSide(rdma_cm_id* id, const Verbs& v, const Options& o) : id_(id), v_(v), o_(o), ring_(kWindows * kSlot) {
        if (o.mode != Mode::send) {
            ring_mr_.reset(check_ptr(ibv_reg_mr(v.pd.get(), ring_.data(), ring_.size(),
                                                IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND),
                                     "ibv_reg_mr(LOCAL_WRITE | MW_BIND)"));
            for (auto& w : windows_) w.reset(check_ptr(ibv_alloc_mw(v.pd.get(), IBV_MW_TYPE_2), "ibv_alloc_mw(IBV_MW_TYPE_2)"));
        }
    }

    int run() {
        const auto t0 = Clock::now();
        for (int round = 0; round < o_.rounds; round += o_.batch) {
            const int n = std::min(o_.batch, o_.rounds - round);
            // A window is reused only once its last invalidate completed.
            while (inv_pending_ + n > kWindows) poll();
            for (int i = 0; i < n; ++i) {
                if (o_.mode == Mode::mw_serial) drain_sends();
                if (o_.mode != Mode::send) bind(round + i);
                post_send(round + i);
            }
            if (o_.mode == Mode::send) continue;
            if (o_.mode == Mode::mw_serial) drain_sends();
            for (int i = 0; i < n; ++i) invalidate(round + i);
        }
        while (!outstanding_.empty()) poll();
        const double s = std::chrono::duration<double>(Clock::now() - t0).count();
        std::printf("RESULT: ok: %d rounds in %.1f s: %d of %d SENDs and %d of %d LOCAL_INVs completed, "
                    "%d binds (unsignalled)\n",
                    o_.rounds, s, sends_done_, sends_posted_, invs_done_, invs_posted_, binds_posted_);
        return 0;
    }

private:
    void post(ibv_send_wr& wr, const char* call) {
        ibv_send_wr* bad = nullptr;
        check_rc(ibv_post_send(id_->qp, &wr, &bad), call);
        if (wr.send_flags & IBV_SEND_SIGNALED) outstanding_.push_back({wr.wr_id, Clock::now()});
    }

    void bind(int round) {
        ibv_mw* mw = windows_[round % kWindows].get();
        const std::uint32_t rkey = ibv_inc_rkey(mw->rkey);
        ibv_send_wr wr{};
        wr.wr_id = wr_id(round, kBind);
        wr.opcode = IBV_WR_BIND_MW;
        wr.bind_mw.mw = mw;
        wr.bind_mw.rkey = rkey;
        wr.bind_mw.bind_info.mr = ring_mr_.get();
        wr.bind_mw.bind_info.addr = reinterpret_cast<std::uintptr_t>(ring_.data()) + (round % kWindows) * kSlot;
        wr.bind_mw.bind_info.length = kSlot;
        wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
        post(wr, "ibv_post_send(IBV_WR_BIND_MW)");
        // rxe's provider takes the window's current key from mw->rkey in the
        // next bind; for a type 2 window nobody but us updates it.
        mw->rkey = rkey;
        ++binds_posted_;
    }

    void post_send(int round) {
        std::array<char, kMessage> msg{};
        std::snprintf(msg.data(), msg.size(), "credit %d", round);
        ibv_sge sge{reinterpret_cast<std::uintptr_t>(msg.data()), kMessage, 0};
        ibv_send_wr wr{};
        wr.wr_id = wr_id(round, kSend);
        wr.opcode = IBV_WR_SEND;
        wr.sg_list = &sge;
        wr.num_sge = 1;
        wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
        post(wr, "ibv_post_send(IBV_WR_SEND)");
        ++sends_posted_;
        ++sends_pending_;
    }

    void invalidate(int round) {
        ibv_send_wr wr{};
        wr.wr_id = wr_id(round, kInv);
        wr.opcode = IBV_WR_LOCAL_INV;
        wr.send_flags = IBV_SEND_SIGNALED;
        wr.invalidate_rkey = windows_[round % kWindows]->rkey;
        post(wr, "ibv_post_send(IBV_WR_LOCAL_INV)");
        ++invs_posted_;
        ++inv_pending_;
    }

    void drain_sends() {
        while (sends_pending_ > 0) poll();
    }

    // One batch of completions, or a stall report.
    void poll() {
        std::array<ibv_wc, 16> wc{};
        for (;;) {
            const int n = ibv_poll_cq(v_.send_cq.get(), static_cast<int>(wc.size()), wc.data());
            if (n < 0) throw Failure("ibv_poll_cq failed");
            for (int i = 0; i < n; ++i) complete(wc[static_cast<std::size_t>(i)]);
            if (n > 0) return;
            const auto& [id, since] = outstanding_.front();
            if (Clock::now() - since > std::chrono::milliseconds(o_.stall_ms)) stall(id);
            std::this_thread::sleep_for(200us);
        }
    }

    void complete(const ibv_wc& wc) {
        const Kind k = wr_kind(wc.wr_id);
        if (wc.status != IBV_WC_SUCCESS) {
            throw Failure(std::string(kind_name(k)) + " of round " + std::to_string(wr_round(wc.wr_id)) +
                          " completed with status " + ibv_wc_status_str(wc.status) + " (" +
                          std::to_string(wc.status) + ", vendor_err " + std::to_string(wc.vendor_err) + ") after " +
                          counts() + "; QP state " + qp_state(id_->qp));
        }
        if (outstanding_.empty() || outstanding_.front().id != wc.wr_id) {
            throw Failure(std::string("completion out of order: ") + kind_name(k) + " of round " +
                          std::to_string(wr_round(wc.wr_id)));
        }
        outstanding_.pop_front();
        if (k == kSend) {
            ++sends_done_;
            --sends_pending_;
        } else if (k == kInv) {
            ++invs_done_;
            --inv_pending_;
        }
    }

    [[noreturn]] void stall(std::uint64_t id) {
        const Kind k = wr_kind(id);
        throw Failure(std::string(kind_name(k)) + " of round " + std::to_string(wr_round(id)) +
                      " never completed within " + std::to_string(o_.stall_ms) + " ms (" +
                      std::to_string(outstanding_.size()) + " signalled work requests waiting); " + counts() +
                      "; QP state " + qp_state(id_->qp));
    }

    std::string counts() const {
        return std::to_string(sends_done_) + " of " + std::to_string(sends_posted_) + " SENDs and " +
               std::to_string(invs_done_) + " of " + std::to_string(invs_posted_) + " LOCAL_INVs completed";
    }

    struct Posted {
        std::uint64_t id;
        Clock::time_point since;
    };
    rdma_cm_id* id_;
    const Verbs& v_;
    const Options& o_;
    std::vector<std::byte> ring_;
    Mr ring_mr_;
    std::array<Mw, kWindows> windows_; // declared after the region: unbound first
    std::deque<Posted> outstanding_;
    int sends_posted_ = 0, sends_done_ = 0, sends_pending_ = 0;
    int invs_posted_ = 0, invs_done_ = 0, inv_pending_ = 0;
    int binds_posted_ = 0;
};

int run_listener(const Options& o) {
    AddrInfo ai(o.host, o.port, true);
    rdma_cm_id* raw = nullptr;
    check_errno(rdma_create_ep(&raw, ai.p, nullptr, nullptr), "rdma_create_ep(listen)");
    Ep listener(raw);
    check_errno(rdma_listen(listener.get(), 1), "rdma_listen");
    std::printf("listening on port %s, mode %s, batch %d, %d rounds\n", o.port.c_str(),
                o.mode == Mode::mw ? "mw" : o.mode == Mode::send ? "send" : "mw-serial", o.batch, o.rounds);
    std::fflush(stdout);
    check_errno(rdma_get_request(listener.get(), &raw), "rdma_get_request");
    Ep id(raw);
    Verbs v(id.get());
    set_ack_timeout(id.get());
    rdma_conn_param p = conn_param();
    check_errno(rdma_accept(id.get(), &p), "rdma_accept");
    // The window's side keeps the wire as the stream's receiver does: its
    // SENDs are credits, so the peer must have receives posted (it posts
    // them before it connects).
    SendSide side(id.get(), v, o);
    const int rc = side.run();
    rdma_disconnect(id.get());
    return rc;
}

int run_receiver(const Options& o) {
    AddrInfo ai(o.host, o.port, false);
    std::vector<std::array<char, kMessage>> bufs(128);
    Ep id;
    std::unique_ptr<Verbs> v;
    Mr mr;
    const auto give_up = Clock::now() + 120s;
    for (;;) {
        rdma_cm_id* raw = nullptr;
        check_errno(rdma_create_ep(&raw, ai.p, nullptr, nullptr), "rdma_create_ep");
        id.reset(raw);
        v = std::make_unique<Verbs>(id.get());
        mr.reset(check_ptr(ibv_reg_mr(v->pd.get(), bufs.data(), bufs.size() * kMessage, IBV_ACCESS_LOCAL_WRITE),
                           "ibv_reg_mr"));
        for (std::size_t i = 0; i < bufs.size(); ++i) {
            ibv_sge sge{reinterpret_cast<std::uintptr_t>(bufs[i].data()), kMessage, mr->lkey};
            ibv_recv_wr wr{};
            ibv_recv_wr* bad = nullptr;
            wr.wr_id = i;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            check_rc(ibv_post_recv(id->qp, &wr, &bad), "ibv_post_recv");
        }
        set_ack_timeout(id.get());
        rdma_conn_param p = conn_param();
        if (rdma_connect(id.get(), &p) == 0) break;
        const int err = errno;
        mr.reset();
        v.reset();
        id.reset();
        if (Clock::now() > give_up) fail_errno("rdma_connect (for 120 s)", err);
        std::this_thread::sleep_for(500ms);
    }
    int got = 0;
    auto last = Clock::now();
    std::array<ibv_wc, 16> wc{};
    while (got < o.rounds) {
        const int n = ibv_poll_cq(v->recv_cq.get(), static_cast<int>(wc.size()), wc.data());
        if (n < 0) throw Failure("ibv_poll_cq failed");
        for (int i = 0; i < n; ++i) {
            const ibv_wc& w = wc[static_cast<std::size_t>(i)];
            if (w.status != IBV_WC_SUCCESS) {
                throw Failure("receive " + std::to_string(got) + " completed with status " +
                              ibv_wc_status_str(w.status));
            }
            ++got;
            const std::size_t b = w.wr_id;
            ibv_sge sge{reinterpret_cast<std::uintptr_t>(bufs[b].data()), kMessage, mr->lkey};
            ibv_recv_wr wr{};
            ibv_recv_wr* bad = nullptr;
            wr.wr_id = b;
            wr.sg_list = &sge;
            wr.num_sge = 1;
            check_rc(ibv_post_recv(id->qp, &wr, &bad), "ibv_post_recv");
        }
        if (n > 0) {
            last = Clock::now();
        } else if (Clock::now() - last > std::chrono::milliseconds(o.stall_ms + 5000)) {
            throw Failure("only " + std::to_string(got) + " of " + std::to_string(o.rounds) +
                          " messages arrived (none for " + std::to_string(o.stall_ms + 5000) + " ms)");
        } else {
            std::this_thread::sleep_for(200us);
        }
    }
    std::printf("RESULT: ok: %d of %d messages arrived\n", got, o.rounds);
    rdma_disconnect(id.get());
    return 0;
}

int usage() {
    std::fprintf(stderr,
                 "usage: rdmastream-mw-stall-probe --listen [ADDR:]PORT | --connect ADDR:PORT\n"
                 "         [--mode mw|send|mw-serial] [--batch N] [--rounds N] [--stall-ms MS]\n");
    return 2;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    bool have_role = false;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        if (i + 1 >= argc) return usage();
        const std::string v = argv[++i];
        if (a == "--listen" || a == "--connect") {
            o.listen = a == "--listen";
            const auto colon = v.rfind(':');
            o.host = colon == std::string::npos ? "" : v.substr(0, colon);
            o.port = colon == std::string::npos ? v : v.substr(colon + 1);
            if (!o.listen && o.host.empty()) return usage();
            have_role = true;
        } else if (a == "--mode") {
            if (v == "mw") o.mode = Mode::mw;
            else if (v == "send") o.mode = Mode::send;
            else if (v == "mw-serial") o.mode = Mode::mw_serial;
            else return usage();
        } else if (a == "--batch") {
            o.batch = std::atoi(v.c_str());
        } else if (a == "--rounds") {
            o.rounds = std::atoi(v.c_str());
        } else if (a == "--stall-ms") {
            o.stall_ms = std::atoi(v.c_str());
        } else {
            return usage();
        }
    }
    if (!have_role || o.batch < 1 || o.batch > kWindows || o.rounds < 1 || o.stall_ms < 100) return usage();
    try {
        return o.listen ? run_listener(o) : run_receiver(o);
    } catch (const Failure& e) {
        std::printf("RESULT: FAILED: %s\n", e.what());
        return 1;
    }
}
