// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory_fabric.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <poll.h>

#include <array>
#include <cstring>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

namespace rdmastream::harness {

namespace {
using Clock = std::chrono::steady_clock;

// Fixed-capacity FIFO: the fabric allocates nothing per message.
template <typename T, std::size_t N>
class Fifo {
public:
    bool push(T v) { // by value: a CmEvent moves in
        if (count_ == N) return false;
        items_[(head_ + count_++) % N] = std::move(v);
        return true;
    }
    bool empty() const noexcept { return count_ == 0; }
    T pop() {
        T v = std::move(items_[head_]);
        head_ = (head_ + 1) % N;
        --count_;
        return v;
    }

private:
    std::array<T, N> items_{};
    std::size_t head_ = 0, count_ = 0;
};

struct Recv {
    std::uint64_t wr_id = 0;
    ibv_sge sge{}; // one: what the stream ends post
    bool has_sge = false;
};

struct Region {
    int owner = -1;
    std::byte* base = nullptr;
    std::size_t size = 0;
    int access = 0;
};

// A type 2 memory window: answers to `rkey` over [addr, addr + length) of
// region `mr_key` while bound. Its rkey is kWindowKey | index << 8 | key
// byte (region keys are small indices: the two never meet).
struct Window {
    int owner = -1;
    bool bound = false;
    std::uint32_t rkey = 0;
    std::uint32_t mr_key = 0;
    std::uint64_t addr = 0;
    std::size_t length = 0;
    int access = 0;
};
constexpr std::uint32_t kWindowKey = 0x80000000u;

constexpr std::size_t kQueue = 4096;
} // namespace

struct MemoryFabric::State {
    struct End {
        bool taken = false;
        bool down = false; // stopped, hung up, or failed: the QP is in error
        Fifo<Recv, kQueue> recvs;
        Fifo<ibv_wc, kQueue> cq;
        Fifo<CmEvent, 16> events;
        Waker ready; // a completion or an event arrived
        std::uint32_t qp_num = 0;
        std::uint64_t writes = 0, sends = 0; // posted
        int refuse_send = 0;                 // refuse_next_send's errno, until a post_send takes it
    };
    std::mutex mutex;
    std::array<End, 2> ends;
    std::vector<Region> regions; // by key - 1; a forgotten one has owner -1
    std::vector<Window> windows; // by (rkey & ~kWindowKey) >> 8; likewise
    bool have_windows = true;    // the device has type 2 memory windows
    std::uint64_t copied = 0;
    std::size_t slow_from = SIZE_MAX; // slow_registration
    std::chrono::milliseconds slow_delay{0};

    // Both under `mutex`.
    void complete(int side, const ibv_wc& wc) {
        if (!ends[side].cq.push(wc)) throw std::logic_error("harness: completion queue overrun");
        ends[side].ready.wake();
    }
    // A remote write's target: a window bound with exactly this key, the
    // range inside the window's (the IB spec's rule; rxe checks only the
    // region's), or a region of its own with remote write access.
    const Region* remote(std::uint32_t rkey, int owner, std::uint64_t addr, std::size_t len) const {
        if ((rkey & kWindowKey) == 0) return region(rkey, owner, addr, len, IBV_ACCESS_REMOTE_WRITE);
        const std::size_t index = (rkey & ~kWindowKey) >> 8;
        if (index >= windows.size()) return nullptr;
        const Window& w = windows[index];
        if (w.owner != owner || !w.bound || w.rkey != rkey || addr < w.addr || addr - w.addr > w.length ||
            len > w.length - (addr - w.addr) || (w.access & IBV_ACCESS_REMOTE_WRITE) == 0) {
            return nullptr;
        }
        return region(w.mr_key, owner, addr, len, 0);
    }
    const Region* region(std::uint32_t key, int owner, std::uint64_t addr, std::size_t len, int need) const {
        if (key == 0 || key > regions.size()) return nullptr;
        const Region& r = regions[key - 1];
        const auto base = reinterpret_cast<std::uintptr_t>(r.base);
        if (r.owner != owner || r.base == nullptr || addr < base || addr - base > r.size || len > r.size - (addr - base) ||
            (need != 0 && (r.access & need) != need)) {
            return nullptr;
        }
        return &r;
    }
};

namespace {

// A ring on the fabric: its regions and windows in the fabric's tables,
// with ibv_mr and ibv_mw stand-ins for SlotRing's work requests to name.
class FabricRing final : public SlotRing {
public:
    FabricRing(std::shared_ptr<MemoryFabric::State> s, int side, std::uint32_t slot_count, std::uint32_t slot_size,
               bool windows)
        : SlotRing(slot_count, slot_size), s_(std::move(s)) {
        const std::uint32_t regions = windows ? slot_count : 1;
        const std::size_t size = windows ? slot_size : std::size_t{slot_count} * slot_size;
        const int access = windows ? IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND
                                   : IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
        mrs_.resize(regions);
        mws_.resize(windows ? slot_count : 0);
        std::lock_guard lock(s_->mutex);
        for (std::uint32_t i = 0; i < regions; ++i) {
            s_->regions.push_back(Region{side, slot(i).data(), size, access});
            const auto key = static_cast<std::uint32_t>(s_->regions.size());
            mrs_[i].addr = slot(i).data();
            mrs_[i].length = size;
            mrs_[i].lkey = mrs_[i].rkey = key;
            regions_.push_back(&mrs_[i]);
        }
        for (std::uint32_t i = 0; i < mws_.size(); ++i) {
            const auto index = static_cast<std::uint32_t>(s_->windows.size());
            s_->windows.push_back(Window{side, false, kWindowKey | index << 8, 0, 0, 0, 0});
            mws_[i].rkey = kWindowKey | index << 8;
            mws_[i].type = IBV_MW_TYPE_2;
            windows_.push_back(&mws_[i]);
        }
    }
    ~FabricRing() override {
        std::lock_guard lock(s_->mutex);
        for (const ibv_mw& w : mws_) s_->windows[(w.rkey & ~kWindowKey) >> 8] = Window{};
        for (const ibv_mr& r : mrs_) s_->regions[r.lkey - 1] = Region{};
    }

private:
    std::shared_ptr<MemoryFabric::State> s_;
    std::vector<ibv_mr> mrs_; // sized once: regions_ and windows_ point into them
    std::vector<ibv_mw> mws_;
};

class FabricEnd final : public Datapath {
public:
    FabricEnd(std::shared_ptr<MemoryFabric::State> s, int side, PollMode mode, Waker* waker)
        : s_(std::move(s)), side_(side), peer_(1 - side), mode_(mode), waker_(waker) {}

    ~FabricEnd() override { disconnect(); }

    RegisteredRegion register_memory(std::size_t size, int access) override {
        std::chrono::milliseconds delay{0};
        {
            std::lock_guard lock(s_->mutex);
            if (size >= s_->slow_from) delay = s_->slow_delay;
        }
        std::this_thread::sleep_for(delay); // pinning: this end does nothing else meanwhile
        std::uint32_t key = 0;
        {
            std::lock_guard lock(s_->mutex);
            s_->regions.push_back(Region{side_, nullptr, size, access});
            key = static_cast<std::uint32_t>(s_->regions.size());
        }
        // Forgotten (by key) when the region goes, before its pages do.
        std::shared_ptr<void> registration(nullptr, [s = s_, key](void*) {
            std::lock_guard lock(s->mutex);
            s->regions[key - 1] = Region{};
        });
        RegisteredRegion r(size, key, std::move(registration));
        std::lock_guard lock(s_->mutex);
        s_->regions[key - 1].base = r.bytes().data();
        return r;
    }

    std::unique_ptr<SlotRing> register_ring(std::uint32_t slot_count, std::uint32_t slot_size, bool windows) override;
    bool has_memory_windows() const override {
        std::lock_guard lock(s_->mutex);
        return s_->have_windows;
    }
    std::string device_name() const override { return "harness"; }

    void post_send(ibv_send_wr& list, const char* what) override {
        for (ibv_send_wr* wr = &list; wr != nullptr; wr = wr->next) {
            if (wr->num_sge > 2 || (wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_SEND_WITH_IMM &&
                                    wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_BIND_MW &&
                                    wr->opcode != IBV_WR_LOCAL_INV)) {
                throw SystemError(what, EINVAL,
                                  "the harness takes WRITE_WITH_IMM, SEND_WITH_IMM or SEND with <= 2 SGEs, "
                                  "BIND_MW and LOCAL_INV");
            }
        }
        std::lock_guard lock(s_->mutex);
        if (const int err = std::exchange(s_->ends[side_].refuse_send, 0); err != 0) {
            throw SystemError(what, err, "refused by the test (refuse_next_send)");
        }
        for (ibv_send_wr* wr = &list; wr != nullptr; wr = wr->next) {
            if (wr->opcode == IBV_WR_BIND_MW || wr->opcode == IBV_WR_LOCAL_INV) {
                local(*wr);
            } else {
                carry(*wr);
            }
        }
    }

private:
    // Under the mutex: a write or send, carried to the peer at once.
    void carry(const ibv_send_wr& wr) {
        auto& me = s_->ends[side_];
        auto& peer = s_->ends[peer_];
        const bool write = wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        ++(write ? me.writes : me.sends);
        ibv_wc mine{};
        mine.wr_id = wr.wr_id;
        mine.opcode = write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
        mine.qp_num = me.qp_num;
        mine.status = deliver(wr, me, peer, write);
        if (mine.status != IBV_WC_SUCCESS) {
            me.down = true; // an error completion moves the QP to the error state
        }
        if (mine.status != IBV_WC_SUCCESS || (wr.send_flags & IBV_SEND_SIGNALED) != 0) {
            s_->complete(side_, mine);
        }
    }

    // Under the mutex: a bind or invalidate of one of this end's windows,
    // done at once. Refused as rxe refuses them (a stale current key, a key
    // byte that does not change, a range outside the region, invalidating
    // with another key): a memory management error, and the QP goes down.
    void local(const ibv_send_wr& wr) {
        auto& me = s_->ends[side_];
        ibv_wc mine{};
        mine.wr_id = wr.wr_id;
        mine.qp_num = me.qp_num;
        mine.opcode = wr.opcode == IBV_WR_BIND_MW ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV;
        mine.status = me.down ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
        const std::uint32_t key = wr.opcode == IBV_WR_BIND_MW ? wr.bind_mw.mw->rkey : wr.invalidate_rkey;
        const std::size_t index = (key & ~kWindowKey) >> 8;
        Window* w = (key & kWindowKey) != 0 && index < s_->windows.size() ? &s_->windows[index] : nullptr;
        if (mine.status == IBV_WC_SUCCESS && (w == nullptr || w->owner != side_ || w->rkey != key)) {
            mine.status = IBV_WC_MW_BIND_ERR;
        }
        if (mine.status == IBV_WC_SUCCESS && wr.opcode == IBV_WR_BIND_MW) {
            const ibv_mw_bind_info& b = wr.bind_mw.bind_info;
            if ((wr.bind_mw.rkey & ~0xffu) != (key & ~0xffu) || (wr.bind_mw.rkey & 0xffu) == (key & 0xffu) ||
                s_->region(b.mr->lkey, side_, b.addr, b.length, IBV_ACCESS_MW_BIND) == nullptr) {
                mine.status = IBV_WC_MW_BIND_ERR;
            } else {
                *w = Window{side_, true, wr.bind_mw.rkey, b.mr->lkey, b.addr, b.length,
                            static_cast<int>(b.mw_access_flags)};
            }
        } else if (mine.status == IBV_WC_SUCCESS) {
            w->bound = false;
        }
        if (mine.status != IBV_WC_SUCCESS) {
            me.down = true;
        }
        if (mine.status != IBV_WC_SUCCESS || (wr.send_flags & IBV_SEND_SIGNALED) != 0) {
            s_->complete(side_, mine);
        }
    }

public:
    void post_recv(ibv_recv_wr& list, const char* what) override {
        std::lock_guard lock(s_->mutex);
        auto& me = s_->ends[side_];
        for (ibv_recv_wr* r = &list; r != nullptr; r = r->next) {
            if (r->num_sge > 1) throw SystemError(what, EINVAL, "the harness takes receives of one SGE");
            Recv rv{r->wr_id, r->num_sge == 1 ? r->sg_list[0] : ibv_sge{}, r->num_sge == 1};
            if (me.down) {
                ibv_wc wc{};
                wc.wr_id = r->wr_id;
                wc.status = IBV_WC_WR_FLUSH_ERR;
                s_->complete(side_, wc);
            } else if (!me.recvs.push(rv)) {
                throw SystemError(what, ENOMEM, "receive queue full");
            }
        }
    }

    std::size_t poll(std::span<ibv_wc> out) override {
        std::lock_guard lock(s_->mutex);
        auto& cq = s_->ends[side_].cq;
        std::size_t n = 0;
        while (n < out.size() && !cq.empty()) out[n++] = cq.pop();
        return n;
    }

    Waited wait(std::span<ibv_wc> out, Clock::time_point deadline) override {
        auto& ready = s_->ends[side_].ready;
        for (;;) {
            ready.take();
            if (std::size_t n = poll(out); n > 0) return {Waited::kCompletions, n, {}};
            if (held_event_) return {Waited::kCmEvent, 0, std::exchange(held_event_, std::nullopt)};
            if (auto ev = next_event()) {
                // As CompletionPoller: what the peer sent before the event may
                // have completed since the CQ was found empty; it goes first.
                if (std::size_t n = poll(out); n > 0) {
                    held_event_ = std::move(ev);
                    return {Waited::kCompletions, n, {}};
                }
                return {Waited::kCmEvent, 0, std::move(ev)};
            }
            if (waker_ != nullptr && waker_->take()) return {Waited::kWoken, 0, {}};
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return {};
            if (mode_ == PollMode::kBusy) continue;
            sleep(ready, static_cast<int>(left.count()));
        }
    }

    std::optional<CmEvent> next_event() override {
        std::lock_guard lock(s_->mutex);
        auto& events = s_->ends[side_].events;
        if (events.empty()) return std::nullopt;
        return events.pop();
    }

    std::optional<CmEvent> wait_event(std::chrono::milliseconds timeout) override {
        const auto deadline = Clock::now() + timeout;
        for (;;) {
            s_->ends[side_].ready.take();
            if (auto ev = next_event()) return ev;
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return std::nullopt;
            Waker* user = waker_;
            waker_ = nullptr; // only the fabric's own readiness here
            sleep(s_->ends[side_].ready, static_cast<int>(left.count()));
            waker_ = user;
        }
    }


    void stop() noexcept override {
        std::lock_guard lock(s_->mutex);
        s_->ends[side_].down = true;
    }

    void disconnect() noexcept override {
        std::lock_guard lock(s_->mutex);
        auto& me = s_->ends[side_];
        if (me.down && hung_up_) return;
        me.down = true;
        hung_up_ = true;
        CmEvent ev;
        ev.type = RDMA_CM_EVENT_DISCONNECTED;
        auto& peer = s_->ends[peer_];
        if (!peer.down && peer.events.push(std::move(ev))) peer.ready.wake();
    }

    std::string peer_name() const override { return fmt::format("harness end {}", peer_); }

private:
    void throw_failure(const ibv_wc& wc, const char* side) override {
        throw ConnectionError(fmt::format("{}: work completion failed: {}", side, describe_failed_wc(wc)));
    }

    // Under the mutex. Carries one work request; returns the poster's status.
    ibv_wc_status deliver(const ibv_send_wr& wr, MemoryFabric::State::End& me, MemoryFabric::State::End& peer,
                          bool write) {
        if (me.down) return IBV_WC_WR_FLUSH_ERR;
        if (peer.down) return IBV_WC_RETRY_EXC_ERR; // nobody acknowledges: RC retries run out
        std::size_t total = 0;
        for (int i = 0; i < wr.num_sge; ++i) {
            const ibv_sge& g = wr.sg_list[i];
            if (s_->region(g.lkey, side_, g.addr, g.length, 0) == nullptr) return IBV_WC_LOC_PROT_ERR;
            total += g.length;
        }
        if (peer.recvs.empty()) return IBV_WC_RNR_RETRY_EXC_ERR;
        std::byte* dst = nullptr;
        if (write) {
            if (s_->remote(wr.wr.rdma.rkey, peer_, wr.wr.rdma.remote_addr, total) == nullptr) {
                return IBV_WC_REM_ACCESS_ERR; // nothing lands; as on rxe, the peer sees no completion
            }
            dst = reinterpret_cast<std::byte*>(wr.wr.rdma.remote_addr);
        }
        const Recv rv = peer.recvs.pop();
        ibv_wc theirs{};
        theirs.wr_id = rv.wr_id;
        theirs.qp_num = peer.qp_num;
        if (!write) {
            if (total > (rv.has_sge ? rv.sge.length : 0)) {
                theirs.status = IBV_WC_LOC_LEN_ERR;
                peer.down = true;
                s_->complete(peer_, theirs);
                return IBV_WC_REM_INV_REQ_ERR;
            }
            dst = reinterpret_cast<std::byte*>(rv.sge.addr);
        }
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(dst, reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
            dst += wr.sg_list[i].length;
        }
        s_->copied += total;
        theirs.status = IBV_WC_SUCCESS;
        theirs.opcode = write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        theirs.byte_len = static_cast<std::uint32_t>(total);
        if (wr.opcode != IBV_WR_SEND) { // a plain SEND (only a hostile peer's) carries no immediate
            theirs.imm_data = wr.imm_data;
            theirs.wc_flags = IBV_WC_WITH_IMM;
        }
        s_->complete(peer_, theirs);
        return IBV_WC_SUCCESS;
    }

    // Sleeps on the end's readiness and the stream end's waker at once.
    void sleep(Waker& ready, int timeout_ms) {
        if (!ready.sleep_begin()) return;
        const bool user = waker_ != nullptr && waker_->sleep_begin();
        if (waker_ != nullptr && !user) {
            ready.sleep_end(false);
            return; // a wake is pending: taken by the caller's loop
        }
        pollfd fds[2] = {{ready.fd(), POLLIN, 0}, {user ? waker_->fd() : -1, POLLIN, 0}};
        ::poll(fds, 2, timeout_ms);
        ready.sleep_end((fds[0].revents & POLLIN) != 0);
        if (user) waker_->sleep_end((fds[1].revents & POLLIN) != 0);
    }

    std::shared_ptr<MemoryFabric::State> s_;
    int side_, peer_;
    PollMode mode_;
    Waker* waker_;
    bool hung_up_ = false;
    std::optional<CmEvent> held_event_; // read behind completions: wait() returns it after them
};

std::unique_ptr<SlotRing> FabricEnd::register_ring(std::uint32_t slot_count, std::uint32_t slot_size, bool windows) {
    std::chrono::milliseconds delay{0};
    {
        std::lock_guard lock(s_->mutex);
        if (std::size_t{slot_count} * slot_size >= s_->slow_from) delay = s_->slow_delay;
    }
    std::this_thread::sleep_for(delay); // pinning: this end does nothing else meanwhile
    return std::make_unique<FabricRing>(s_, side_, slot_count, slot_size, windows);
}

} // namespace

void MemoryFabric::without_windows() {
    std::lock_guard lock(state_->mutex);
    state_->have_windows = false;
}

void MemoryFabric::refuse_next_send(int side, int err) {
    std::lock_guard lock(state_->mutex);
    state_->ends[side].refuse_send = err;
}

MemoryFabric::MemoryFabric() : state_(std::make_shared<State>()) {
    state_->ends[0].qp_num = 1;
    state_->ends[1].qp_num = 2;
}

MemoryFabric::~MemoryFabric() = default;

std::unique_ptr<Datapath> MemoryFabric::end(int side, PollMode mode, Waker* waker) {
    std::lock_guard lock(state_->mutex);
    if (side < 0 || side > 1 || state_->ends[side].taken) {
        throw std::logic_error(fmt::format("harness: end {} is not free", side));
    }
    state_->ends[side].taken = true;
    return std::make_unique<FabricEnd>(state_, side, mode, waker);
}

void MemoryFabric::slow_registration(std::size_t bytes, std::chrono::milliseconds delay) {
    std::lock_guard lock(state_->mutex);
    state_->slow_from = bytes;
    state_->slow_delay = delay;
}

std::uint64_t MemoryFabric::writes_posted(int side) const noexcept {
    std::lock_guard lock(state_->mutex);
    return state_->ends[side].writes;
}

std::uint64_t MemoryFabric::sends_posted(int side) const noexcept {
    std::lock_guard lock(state_->mutex);
    return state_->ends[side].sends;
}

std::uint64_t MemoryFabric::copied_bytes() const noexcept {
    std::lock_guard lock(state_->mutex);
    return state_->copied;
}

} // namespace rdmastream::harness
