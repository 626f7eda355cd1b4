// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory_fabric.hpp"

#include "rdmastream/error.hpp"

#include <fmt/format.h>

#include <poll.h>

#include <array>
#include <atomic>
#include <cstring>
#include <deque>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <utility>
#include <vector>

namespace rdmastream::harness {

// Who touches what. Each end is driven by one thread at a time (Datapath's
// thread rule; a hand-over between threads, e.g. a std::thread started or
// joined, orders the two). Per frame, the two ends' threads meet only
// through single-producer, single-consumer rings and atomics; the mutex
// `control` guards only what is rare (taking an end, growing the key
// tables, connection events, slow_registration):
//
//   End::recvs     this end's posted receives. Producer: this end
//                  (post_recv). Consumer: the peer, whose write or send
//                  takes the oldest.
//   End::arrivals  completions of this end's receives. Producer: the peer
//                  (its write or send landed). Consumer: this end (poll).
//   End::own       completions of this end's own work requests (writes,
//                  sends, binds, invalidations, flushed receives). This
//                  end's thread alone: a plain FIFO. Each is stamped with
//                  how many arrivals had been pushed when it was, and poll
//                  hands out those arrivals first: completions come out in
//                  the order they were made, as from one CQ under one lock.
//   End::stalled   this end's work requests held up behind one the peer
//                  had no receive for (receiver not ready), oldest first;
//                  this end's thread alone. End::rnr_waiting says there are
//                  some (set by this end): the peer's post_recv then wakes
//                  it. Both relaxed (no fence on the per-frame post_recv):
//                  a wake lost to the race costs a stalled end in event
//                  mode at most kRnrRetry, the cap on its sleeps, as a
//                  NIC retries on its RNR timer.
//   End::down      set by this end (stop, disconnect, a failed work
//                  request) or by the peer (a send too long for this end's
//                  receive); read by both.
//   End::carrying  set by this end while a write or send of its own is
//                  under way (checks, copy into the peer's memory, the
//                  peer's completion). Whatever takes memory away from the
//                  peer's reach (stop, disconnect, forgetting a region)
//                  first publishes that (a seq_cst store of `down` or of
//                  the region's entry), then waits until the peer carries
//                  nothing (a seq_cst load of this flag): with the carrier's
//                  seq_cst store of the flag before its seq_cst loads, one
//                  of the two sees the other, so no copy lands in memory
//                  already given back ("nothing touches posted buffers"
//                  after stop()).
//   regions, windows  the key tables, read by both ends without a lock
//                  (an end checks its own lkeys, the peer's rkeys and
//                  windows). An entry is written by its owner's thread only
//                  (register, bind, invalidate, forget) and read by either
//                  through a sequence lock (SeqCell); the tables grow under
//                  `control` in chunks that never move.
//   statistics     each end's counters are written by its own thread alone
//                  (relaxed atomics) and read by anyone.

namespace {
using Clock = std::chrono::steady_clock;
constexpr std::size_t kCacheLine = 64;

// Fixed-capacity FIFO for one thread (or under a lock): the fabric
// allocates nothing per message.
template <typename T, std::size_t N>
class Fifo {
public:
    bool push(T v) { // by value: a CmEvent moves in
        if (count_ == N) return false;
        items_[(head_ + count_++) % N] = std::move(v);
        return true;
    }
    bool empty() const noexcept { return count_ == 0; }
    const T& front() const noexcept { return items_[head_]; }
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

// Single-producer, single-consumer ring of fixed capacity N (a power of
// two): claim() and publish() on the producer's thread only; front() and
// pop() on the consumer's only. Each slot holds its item and the count that filled it
// (its turn), in one cache line: the consumer looks at the next slot's
// turn, not at a shared tail counter, so an item moves one line between
// the cores, not two (the counter's line and the item's; at 4 KiB busy the
// counter's load was the costliest instruction of a post). tail_ is still
// published, for pushed() (rare: the stamp on an own completion); head_
// is read by the producer only when the ring looks full.
template <typename T, std::size_t N>
class SpscRing {
    static_assert(N > 0 && (N & (N - 1)) == 0, "a power of two");

public:
    // The next slot's item, for the producer to fill in place, then
    // publish(); null when the ring is full. In place: an item built on the
    // stack and copied in (16 bytes at a time over its smaller field
    // stores) made the copy wait for those stores, behind the payload's,
    // to reach the cache; at 4 KiB busy that was most of a delivery's time.
    T* claim() noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed);
        if (t - head_seen_ == N) {
            head_seen_ = head_.load(std::memory_order_acquire);
            if (t - head_seen_ == N) return nullptr;
        }
        return &slots_[t % N].item;
    }
    void publish() noexcept {
        const std::uint64_t t = tail_.load(std::memory_order_relaxed);
        slots_[t % N].turn.store(t + 1, std::memory_order_release);
        tail_.store(t + 1, std::memory_order_release);
    }
    // The oldest item, or null when there is none (consumer).
    const T* front() noexcept {
        const std::uint64_t h = head_.load(std::memory_order_relaxed);
        const Slot& s = slots_[h % N];
        return s.turn.load(std::memory_order_acquire) == h + 1 ? &s.item : nullptr;
    }
    void pop() noexcept { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }
    // Items ever popped (consumer) and ever pushed (any thread: published).
    std::uint64_t popped() const noexcept { return head_.load(std::memory_order_relaxed); }
    std::uint64_t pushed() const noexcept { return tail_.load(std::memory_order_acquire); }

private:
    struct alignas(kCacheLine) Slot {
        std::atomic<std::uint64_t> turn{0}; // the count + 1 of the push that filled it
        T item{};
    };
    static_assert(sizeof(Slot) == kCacheLine, "one line per slot");

    alignas(kCacheLine) std::atomic<std::uint64_t> head_{0}; // written by the consumer
    alignas(kCacheLine) std::atomic<std::uint64_t> tail_{0}; // written by the producer
    std::uint64_t head_seen_ = 0;                            // the producer's copy of head_
    std::array<Slot, N> slots_{};
};

// One value of a trivially copyable T, written by one thread at a time and
// read by any without a lock: a sequence lock over words that are atomics
// (odd sequence: being written; a reader that saw it move reads again).
// The reader's first load and the writer's last store are seq_cst: the
// carrying handshake above relies on them.
template <typename T>
class SeqCell {
    static_assert(std::is_trivially_copyable_v<T>);
    static constexpr std::size_t kWords = (sizeof(T) + 7) / 8;

public:
    void store(const T& v) noexcept {
        std::array<std::uint64_t, kWords> w{};
        std::memcpy(w.data(), &v, sizeof v);
        const std::uint32_t s = seq_.load(std::memory_order_relaxed);
        seq_.store(s + 1, std::memory_order_relaxed);
        std::atomic_thread_fence(std::memory_order_release);
        for (std::size_t i = 0; i < kWords; ++i) words_[i].store(w[i], std::memory_order_relaxed);
        seq_.store(s + 2, std::memory_order_seq_cst);
    }
    T load() const noexcept {
        std::array<std::uint64_t, kWords> w{};
        for (;;) {
            const std::uint32_t s = seq_.load(std::memory_order_seq_cst);
            if ((s & 1) != 0) continue;
            for (std::size_t i = 0; i < kWords; ++i) w[i] = words_[i].load(std::memory_order_relaxed);
            std::atomic_thread_fence(std::memory_order_acquire);
            if (seq_.load(std::memory_order_relaxed) == s) break;
        }
        T v;
        std::memcpy(static_cast<void*>(&v), w.data(), sizeof v); // trivially copyable
        return v;
    }

private:
    std::atomic<std::uint32_t> seq_{0};
    std::array<std::atomic<std::uint64_t>, kWords> words_{};
};

// A table of SeqCells by index that grows (under the fabric's `control`
// mutex) in chunks that never move, and is read without a lock.
template <typename T>
class KeyTable {
    static constexpr std::size_t kChunk = 256, kChunks = 1024;
    using Chunk = std::array<SeqCell<T>, kChunk>;

public:
    // Under `control`: a new entry holding `v`; its index.
    std::size_t add_locked(const T& v) {
        const std::size_t i = size_.load(std::memory_order_relaxed);
        if (i == kChunk * kChunks) throw std::logic_error("harness: key table full");
        if (i % kChunk == 0) {
            owned_.push_back(std::make_unique<Chunk>());
            chunks_[i / kChunk].store(owned_.back().get(), std::memory_order_release);
        }
        cell(i).store(v);
        size_.store(i + 1, std::memory_order_release);
        return i;
    }
    // The entry's owner's thread: a new value for entry i (< size()).
    void set(std::size_t i, const T& v) noexcept { cell(i).store(v); }
    // Any thread: entry i, or false when there is none.
    bool get(std::size_t i, T& out) const noexcept {
        if (i >= size_.load(std::memory_order_acquire)) return false;
        out = cell(i).load();
        return true;
    }

private:
    SeqCell<T>& cell(std::size_t i) const noexcept {
        return (*chunks_[i / kChunk].load(std::memory_order_acquire))[i % kChunk];
    }

    std::array<std::atomic<Chunk*>, kChunks> chunks_{};
    std::atomic<std::size_t> size_{0};
    std::vector<std::unique_ptr<Chunk>> owned_; // under `control`
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

// What deliver() returns when the peer has no receive posted. Never a
// completion's status: RcConnection sets rnr_retry 7, with which the NIC
// retries a receiver-not-ready NAK for as long as it takes, so the work
// request waits (End::stalled) and the sender's own limits bound the wait
// (SenderOptions::ack_limit), as over verbs.
constexpr ibv_wc_status kReceiverNotReady = IBV_WC_RNR_RETRY_EXC_ERR;

// A work request held up behind a receiver-not-ready, copied (the caller's
// list, like a NIC's, is its own again once ibv_post_send returns),
// including what its pointers name.
struct Stalled {
    ibv_send_wr wr{};
    std::array<ibv_sge, 3> sges{};
    ibv_mw mw{}; // a bind's window and region
    ibv_mr mr{};

    explicit Stalled(const ibv_send_wr& w) : wr(w) {
        for (int i = 0; i < w.num_sge; ++i) sges[i] = w.sg_list[i];
        if (w.opcode == IBV_WR_BIND_MW) {
            mw = *w.bind_mw.mw;
            mr = *w.bind_mw.bind_info.mr;
        }
    }
    // The request, its pointers aimed at this copy.
    const ibv_send_wr& request() {
        wr.next = nullptr;
        wr.sg_list = sges.data();
        if (wr.opcode == IBV_WR_BIND_MW) {
            wr.bind_mw.mw = &mw;
            wr.bind_mw.bind_info.mr = &mr;
        }
        return wr;
    }
};

// Queue depths. A receive queue holds at most wire::kMaxSlots + 1 receives
// (FrameReceiver posts one per slot and one more; FrameSender one per
// credit in flight, 256); each arrival consumed one and is polled before
// the receive is posted again. An end's own completions are at most its
// send queue (FrameReceiver: 2 * slots + 10) plus its flushed receives.
constexpr std::size_t kRecvDepth = 8192;
constexpr std::size_t kOwnDepth = 16384;
static_assert(kRecvDepth > wire::kMaxSlots && kOwnDepth > 3 * wire::kMaxSlots + 11);

// The longest a stalled end sleeps before it looks for the peer's receives
// again, should the peer's wake have crossed its going to sleep.
constexpr std::chrono::milliseconds kRnrRetry{1};

// Spins of a busy wait() per look at the clock (its deadline).
constexpr unsigned kSpinsPerClock = 64;

// An own completion, with the count of arrivals pushed before it was.
struct Own {
    ibv_wc wc{};
    std::uint64_t after = 0;
};

// The owner's single-writer counter: a relaxed load and store, no RMW.
void bump(std::atomic<std::uint64_t>& c, std::uint64_t n) noexcept {
    c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}
} // namespace

struct MemoryFabric::State {
    struct End {
        // Written per frame by the peer (see "Who touches what").
        SpscRing<Recv, kRecvDepth> recvs;
        SpscRing<ibv_wc, kRecvDepth> arrivals;
        Waker ready; // an arrival (event mode only) or an event came: woken by the peer
        // Written per frame by this end's own thread.
        alignas(kCacheLine) std::atomic<bool> carrying{false};
        std::atomic<std::uint64_t> writes{0}, sends{0}; // posted
        std::atomic<std::uint64_t> copied{0};           // bytes this end's posts copied
        Fifo<Own, kOwnDepth> own;
        std::deque<Stalled> stalled; // empty but for a receiver-not-ready: allocates only then
        // Rare.
        alignas(kCacheLine) std::atomic<bool> down{false}; // stopped, hung up, or failed: the QP is in error
        // Stopped or hung up by its owner: it takes no more rdma_cm events.
        // (A QP that failed still does: its peer's hang-up is still told.)
        std::atomic<bool> stopped{false};
        std::atomic<bool> refused_request{false}; // failed on a peer's write it refused (set by the peer)
        std::atomic<bool> rnr_waiting{false};              // !stalled.empty(), for the peer's post_recv
        std::atomic<bool> sleeps{true}; // event mode (set when the end is taken): arrivals wake it
        std::atomic<int> refuse_send{0}; // refuse_next_send's errno, until a post_send takes it
        std::atomic<std::uint32_t> pending_events{0}; // events.size(), read without `control`
        std::uint32_t qp_num = 0;                     // set before the ends exist
        bool taken = false;                           // under `control`
        Fifo<CmEvent, 16> events;                     // under `control`
    };
    std::mutex control;
    std::array<End, 2> ends;
    KeyTable<Region> regions; // by key - 1; a forgotten one has owner -1
    KeyTable<Window> windows; // by (rkey & ~kWindowKey) >> 8; likewise
    std::atomic<bool> have_windows{true}; // the device has type 2 memory windows
    std::atomic<bool> cut{false};         // the wire is cut: nothing lands, every post's RC retries run out
    std::atomic<bool> hung{false};        // the wire is silent: nothing lands, no post completes (hang())
    std::size_t slow_from = SIZE_MAX;     // slow_registration, under `control`
    std::chrono::milliseconds slow_delay{0};

    // End `side`'s thread: a completion of its own work request.
    void complete_own(int side, const ibv_wc& wc) {
        End& e = ends[side];
        if (!e.own.push(Own{wc, e.arrivals.pushed()})) throw std::logic_error("harness: completion queue overrun");
    }
    // The peer's thread: the completion of end `side`'s receive, zeroed, to
    // be filled in place, then arrived().
    // A busy-polling end is not woken: its wait() never sleeps on `ready`
    // (wait_event() sleeps there, for events, which wake it themselves), and
    // a wake per frame is a seq_cst store into its Waker, whose line would
    // then travel between the cores twice a frame (the store, its take()).
    ibv_wc& arriving(int side) {
        ibv_wc* wc = ends[side].arrivals.claim();
        if (wc == nullptr) throw std::logic_error("harness: completion queue overrun");
        *wc = ibv_wc{};
        return *wc;
    }
    void arrived(int side) {
        ends[side].arrivals.publish();
        if (ends[side].sleeps.load(std::memory_order_relaxed)) ends[side].ready.wake();
    }
    // Waits until end `side` carries nothing into its peer's memory (see
    // End::carrying); after a seq_cst store that takes memory from its reach.
    void wait_carried(int side) const noexcept {
        while (ends[side].carrying.load(std::memory_order_seq_cst)) std::this_thread::yield();
    }
    // Forgets a region (owner's thread, or under `control`) and waits until
    // no copy into it is under way: its pages may go after this.
    void forget_region(std::uint32_t key) {
        Region r;
        if (!regions.get(key - 1, r)) return;
        regions.set(key - 1, Region{});
        if (r.owner >= 0) wait_carried(1 - r.owner);
    }
    // A remote write's target: a window bound with exactly this key, the
    // range inside the window's (the IB spec's rule; rxe checks only the
    // region's), or a region of its own with remote write access.
    bool remote(std::uint32_t rkey, int owner, std::uint64_t addr, std::size_t len) const {
        if ((rkey & kWindowKey) == 0) return region(rkey, owner, addr, len, IBV_ACCESS_REMOTE_WRITE);
        Window w;
        if (!windows.get((rkey & ~kWindowKey) >> 8, w)) return false;
        if (w.owner != owner || !w.bound || w.rkey != rkey || addr < w.addr || addr - w.addr > w.length ||
            len > w.length - (addr - w.addr) || (w.access & IBV_ACCESS_REMOTE_WRITE) == 0) {
            return false;
        }
        return region(w.mr_key, owner, addr, len, 0);
    }
    bool region(std::uint32_t key, int owner, std::uint64_t addr, std::size_t len, int need) const {
        Region r;
        if (key == 0 || !regions.get(key - 1, r)) return false;
        const auto base = reinterpret_cast<std::uintptr_t>(r.base);
        return r.owner == owner && r.base != nullptr && addr >= base && addr - base <= r.size &&
               len <= r.size - (addr - base) && (need == 0 || (r.access & need) == need);
    }
};

namespace {

// A ring on the fabric: its regions and windows in the fabric's tables,
// with ibv_mr and ibv_mw stand-ins for SlotRing's work requests to name.
// Made and destroyed on its end's thread.
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
        std::lock_guard lock(s_->control);
        for (std::uint32_t i = 0; i < regions; ++i) {
            const auto key = static_cast<std::uint32_t>(s_->regions.add_locked(Region{side, slot(i).data(), size, access}) + 1);
            mrs_[i].addr = slot(i).data();
            mrs_[i].length = size;
            mrs_[i].lkey = mrs_[i].rkey = key;
            regions_.push_back(&mrs_[i]);
        }
        for (std::uint32_t i = 0; i < mws_.size(); ++i) {
            const auto index = static_cast<std::uint32_t>(s_->windows.add_locked(Window{}));
            s_->windows.set(index, Window{side, false, kWindowKey | index << 8, 0, 0, 0, 0});
            mws_[i].rkey = kWindowKey | index << 8;
            mws_[i].type = IBV_MW_TYPE_2;
            windows_.push_back(&mws_[i]);
        }
    }
    ~FabricRing() override {
        for (const ibv_mw& w : mws_) s_->windows.set((w.rkey & ~kWindowKey) >> 8, Window{});
        for (const ibv_mr& r : mrs_) s_->forget_region(r.lkey); // waits for a copy into it: the slots go next
    }

private:
    std::shared_ptr<MemoryFabric::State> s_;
    std::vector<ibv_mr> mrs_; // sized once: regions_ and windows_ point into them
    std::vector<ibv_mw> mws_;
};

// Clears End::carrying on the way out of a post, thrown or not.
class Carrying {
public:
    explicit Carrying(std::atomic<bool>& flag) noexcept : flag_(flag) { flag_.store(true, std::memory_order_seq_cst); }
    ~Carrying() { flag_.store(false, std::memory_order_release); }
    Carrying(const Carrying&) = delete;
    Carrying& operator=(const Carrying&) = delete;

private:
    std::atomic<bool>& flag_;
};

class FabricEnd final : public Datapath {
public:
    FabricEnd(std::shared_ptr<MemoryFabric::State> s, int side, PollMode mode, Waker* waker)
        : s_(std::move(s)), side_(side), peer_(1 - side), mode_(mode), waker_(waker) {}

    ~FabricEnd() override { disconnect(); }

    PageRegistration register_pages(std::span<std::byte> pages, std::size_t, int access) override {
        std::chrono::milliseconds delay{0};
        std::uint32_t key = 0;
        {
            std::lock_guard lock(s_->control);
            if (pages.size() >= s_->slow_from) delay = s_->slow_delay;
            key = static_cast<std::uint32_t>(s_->regions.add_locked(Region{side_, pages.data(), pages.size(), access}) + 1);
        }
        std::this_thread::sleep_for(delay); // pinning: this end does nothing else meanwhile
        // Forgotten (by key) when the registration goes, before the pages do.
        return PageRegistration{key, key, std::shared_ptr<void>(nullptr, [s = s_, key](void*) { s->forget_region(key); })};
    }

    std::unique_ptr<SlotRing> register_ring(std::uint32_t slot_count, std::uint32_t slot_size, bool windows) override;
    bool has_memory_windows() const override { return s_->have_windows.load(); }
    std::string device_name() const override { return "harness"; }

    void post_send(ibv_send_wr& list, const char* what) override {
        for (ibv_send_wr* wr = &list; wr != nullptr; wr = wr->next) {
            if (wr->num_sge > 3 || (wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM && wr->opcode != IBV_WR_SEND_WITH_IMM &&
                                    wr->opcode != IBV_WR_SEND && wr->opcode != IBV_WR_BIND_MW &&
                                    wr->opcode != IBV_WR_LOCAL_INV)) {
                throw SystemError(what, EINVAL,
                                  "the harness takes WRITE_WITH_IMM, SEND_WITH_IMM or SEND with <= 3 SGEs, "
                                  "BIND_MW and LOCAL_INV");
            }
        }
        auto& me = s_->ends[side_];
        if (me.refuse_send.load(std::memory_order_relaxed) != 0) {
            if (const int err = me.refuse_send.exchange(0); err != 0) {
                throw SystemError(what, err, "refused by the test (refuse_next_send)");
            }
        }
        const Carrying carrying(me.carrying);
        if (!me.stalled.empty()) resume();
        for (ibv_send_wr* wr = &list; wr != nullptr; wr = wr->next) {
            if (wr->opcode != IBV_WR_BIND_MW && wr->opcode != IBV_WR_LOCAL_INV) {
                bump(wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM ? me.writes : me.sends, 1);
            }
            if (!me.stalled.empty() || !execute(*wr)) {
                me.stalled.emplace_back(*wr); // a send queue runs in order: behind the one that waits
            }
        }
        if (!me.stalled.empty() && !me.rnr_waiting.load(std::memory_order_relaxed)) {
            me.rnr_waiting.store(true, std::memory_order_relaxed);
        }
    }

private:
    // Carrying: one work request, done now; false (nothing done) when it
    // is a write or send the peer has no receive for.
    bool execute(const ibv_send_wr& wr) {
        if (wr.opcode == IBV_WR_BIND_MW || wr.opcode == IBV_WR_LOCAL_INV) {
            local(wr);
            return true;
        }
        return carry(wr);
    }

    // Carrying, some stalled: the stalled work requests, oldest first, while
    // the peer has receives for them (or until one fails, which flushes the
    // rest).
    void resume() {
        auto& me = s_->ends[side_];
        while (!me.stalled.empty() && execute(me.stalled.front().request())) {
            me.stalled.pop_front();
        }
        if (me.stalled.empty()) me.rnr_waiting.store(false, std::memory_order_relaxed);
    }

    // Carrying: a write or send, carried to the peer at once; false when
    // the peer has no receive posted (it waits: kReceiverNotReady).
    bool carry(const ibv_send_wr& wr) {
        auto& me = s_->ends[side_];
        auto& peer = s_->ends[peer_];
        const bool write = wr.opcode == IBV_WR_RDMA_WRITE_WITH_IMM;
        ibv_wc mine{};
        mine.wr_id = wr.wr_id;
        mine.opcode = write ? IBV_WC_RDMA_WRITE : IBV_WC_SEND;
        mine.qp_num = me.qp_num;
        mine.status = deliver(wr, me, peer, write);
        if (mine.status == kReceiverNotReady) return false;
        if (mine.status != IBV_WC_SUCCESS) {
            me.down.store(true); // an error completion moves the QP to the error state
        }
        if (mine.status != IBV_WC_SUCCESS || (wr.send_flags & IBV_SEND_SIGNALED) != 0) {
            s_->complete_own(side_, mine);
        }
        return true;
    }

    // A bind or invalidate of one of this end's windows, done at once (this
    // end's thread writes its windows' entries; the peer only reads them).
    // Refused as rxe refuses them (a stale current key, a key byte that
    // does not change, a range outside the region, invalidating with
    // another key): a memory management error, and the QP goes down.
    void local(const ibv_send_wr& wr) {
        auto& me = s_->ends[side_];
        ibv_wc mine{};
        mine.wr_id = wr.wr_id;
        mine.qp_num = me.qp_num;
        mine.opcode = wr.opcode == IBV_WR_BIND_MW ? IBV_WC_BIND_MW : IBV_WC_LOCAL_INV;
        mine.status = me.down.load() ? IBV_WC_WR_FLUSH_ERR : IBV_WC_SUCCESS;
        const std::uint32_t key = wr.opcode == IBV_WR_BIND_MW ? wr.bind_mw.mw->rkey : wr.invalidate_rkey;
        const std::size_t index = (key & ~kWindowKey) >> 8;
        Window w;
        const bool found = (key & kWindowKey) != 0 && s_->windows.get(index, w);
        if (mine.status == IBV_WC_SUCCESS && (!found || w.owner != side_ || w.rkey != key)) {
            mine.status = IBV_WC_MW_BIND_ERR;
        }
        if (mine.status == IBV_WC_SUCCESS && wr.opcode == IBV_WR_BIND_MW) {
            const ibv_mw_bind_info& b = wr.bind_mw.bind_info;
            if ((wr.bind_mw.rkey & ~0xffu) != (key & ~0xffu) || (wr.bind_mw.rkey & 0xffu) == (key & 0xffu) ||
                !s_->region(b.mr->lkey, side_, b.addr, b.length, IBV_ACCESS_MW_BIND)) {
                mine.status = IBV_WC_MW_BIND_ERR;
            } else {
                s_->windows.set(index, Window{side_, true, wr.bind_mw.rkey, b.mr->lkey, b.addr, b.length,
                                              static_cast<int>(b.mw_access_flags)});
            }
        } else if (mine.status == IBV_WC_SUCCESS) {
            w.bound = false;
            s_->windows.set(index, w);
        }
        if (mine.status != IBV_WC_SUCCESS) {
            me.down.store(true);
        }
        if (mine.status != IBV_WC_SUCCESS || (wr.send_flags & IBV_SEND_SIGNALED) != 0) {
            s_->complete_own(side_, mine);
        }
    }

public:
    void post_recv(ibv_recv_wr& list, const char* what) override {
        auto& me = s_->ends[side_];
        for (ibv_recv_wr* r = &list; r != nullptr; r = r->next) {
            if (r->num_sge > 1) throw SystemError(what, EINVAL, "the harness takes receives of one SGE");
            if (me.down.load()) {
                ibv_wc wc{};
                wc.wr_id = r->wr_id;
                wc.status = IBV_WC_WR_FLUSH_ERR;
                s_->complete_own(side_, wc);
            } else if (Recv* rv = me.recvs.claim()) {
                rv->wr_id = r->wr_id;
                rv->has_sge = r->num_sge == 1;
                rv->sge = rv->has_sge ? r->sg_list[0] : ibv_sge{};
                me.recvs.publish();
            } else {
                throw SystemError(what, ENOMEM, "receive queue full");
            }
        }
        // A peer whose send queue waits for a receive retries it now.
        auto& peer = s_->ends[peer_];
        if (peer.rnr_waiting.load(std::memory_order_relaxed)) peer.ready.wake();
    }

    std::size_t poll(std::span<ibv_wc> out) override {
        auto& me = s_->ends[side_];
        if (!me.stalled.empty()) { // the NIC's retry: the peer may have posted receives since
            const Carrying carrying(me.carrying);
            resume();
        }
        std::size_t n = 0;
        while (n < out.size()) {
            // An own completion goes before the arrivals pushed after it.
            if (!me.own.empty() && me.own.front().after <= me.arrivals.popped()) {
                out[n++] = me.own.pop().wc;
            } else if (const ibv_wc* wc = me.arrivals.front()) {
                out[n++] = *wc;
                me.arrivals.pop();
            } else if (!me.own.empty()) {
                out[n++] = me.own.pop().wc; // not reached: the arrivals it waits for were published first
            } else {
                break;
            }
        }
        return n;
    }

    Waited wait(std::span<ibv_wc> out, Clock::time_point deadline) override {
        auto& ready = s_->ends[side_].ready;
        for (unsigned spins = 0;; ++spins) {
            if (ready.pending()) ready.take(); // a spinning waiter writes the peer's line only when woken
            if (std::optional<Waited> w = look(out)) return std::move(*w);
            if (waker_ != nullptr && waker_->take()) return {Waited::kWoken, 0, {}};
            // Spinning, the deadline is looked at every kSpinsPerClock spins:
            // a clock read (the vDSO's, ~25 ns on the 2-core host) costs
            // several times the rest of a spin, and each spin's length is
            // added, on average by half, to the time a completion waits to
            // be noticed: the harness's time, not the transport's.
            if (mode_ == PollMode::kBusy && spins % kSpinsPerClock != 0) continue;
            const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now());
            if (left.count() <= 0) return {};
            if (mode_ == PollMode::kBusy) continue;
            const bool stalled = !s_->ends[side_].stalled.empty(); // retried when woken, or after kRnrRetry
            sleep(ready, static_cast<int>(stalled ? std::min(left, kRnrRetry).count() : left.count()));
        }
    }

    // wait()'s two halves for PathWait: the same looks, then a sleep on
    // this end's readiness (rung by the peer's posts and events) beside
    // other datapaths' fds.
    std::optional<Waited> begin_sleep(std::span<ibv_wc> out, SleepFds& fds, Clock::time_point now,
                                      Clock::time_point& wake_at) override {
        auto& me = s_->ends[side_];
        for (;;) {
            if (me.ready.pending()) me.ready.take();
            if (std::optional<Waited> w = look(out)) return w;
            if (me.ready.sleep_begin()) break;
            // Rung meanwhile: look again.
        }
        if (!me.stalled.empty()) wake_at = std::min(wake_at, now + kRnrRetry); // retried after kRnrRetry
        fds.add(me.ready.fd());
        return std::nullopt;
    }
    std::optional<Waited> end_sleep(std::span<ibv_wc> out, std::span<const pollfd> fds) override {
        s_->ends[side_].ready.sleep_end(!fds.empty() && (fds[0].revents & POLLIN) != 0);
        return look(out);
    }

    std::optional<CmEvent> next_event() override {
        auto& me = s_->ends[side_];
        if (me.pending_events.load(std::memory_order_acquire) == 0) return std::nullopt; // no lock per spin
        std::lock_guard lock(s_->control);
        if (me.events.empty()) return std::nullopt;
        me.pending_events.fetch_sub(1);
        return me.events.pop();
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


    FlushCause flush_cause() override {
        // The fabric's own failures complete with their status (no flush
        // first); a refused peer's write leaves only a flush, as on rxe.
        return {std::nullopt, s_->ends[side_].refused_request.load()};
    }

    void stop() noexcept override {
        s_->ends[side_].stopped.store(true);
        s_->ends[side_].down.store(true, std::memory_order_seq_cst);
        s_->wait_carried(peer_); // a copy into this end's buffers under way ends first
    }

    void disconnect() noexcept override {
        if (hung_up_) return; // down since then
        hung_up_ = true;
        stop();
        CmEvent ev;
        ev.type = RDMA_CM_EVENT_DISCONNECTED;
        auto& peer = s_->ends[peer_];
        std::lock_guard lock(s_->control);
        if (!peer.stopped.load() && peer.events.push(std::move(ev))) {
            peer.pending_events.fetch_add(1, std::memory_order_release);
            peer.ready.wake();
        }
    }

    std::string peer_name() const override { return fmt::format("harness end {}", peer_); }

private:
    void throw_failure(const ibv_wc& wc, const char* side) override {
        throw ConnectionError(fmt::format("{}: work completion failed: {}", side, describe_failed_wc(wc)));
    }

    // Carrying (End::carrying set): one work request; returns the poster's
    // status. `peer.down` and the peer's keys are read after the flag went
    // up, so a peer that stops or forgets memory waits for this copy or
    // this copy sees it gone.
    ibv_wc_status deliver(const ibv_send_wr& wr, MemoryFabric::State::End& me, MemoryFabric::State::End& peer,
                          bool write) {
        if (me.down.load()) return IBV_WC_WR_FLUSH_ERR;
        if (s_->hung.load(std::memory_order_relaxed)) return kReceiverNotReady; // waits, retried, until stopped
        if (peer.down.load() || s_->cut.load(std::memory_order_relaxed)) {
            return IBV_WC_RETRY_EXC_ERR; // nobody acknowledges: RC retries run out
        }
        std::size_t total = 0;
        for (int i = 0; i < wr.num_sge; ++i) {
            const ibv_sge& g = wr.sg_list[i];
            if (!s_->region(g.lkey, side_, g.addr, g.length, 0)) return IBV_WC_LOC_PROT_ERR;
            total += g.length;
        }
        const Recv* posted = peer.recvs.front();
        if (posted == nullptr) return kReceiverNotReady;
        std::byte* dst = nullptr;
        if (write) {
            if (!s_->remote(wr.wr.rdma.rkey, peer_, wr.wr.rdma.remote_addr, total)) {
                // Nothing lands. As on rxe (a write longer than a packet),
                // the peer's QP fails with no completion of its own: its
                // oldest receive comes back flushed, and only that.
                const Recv rv = *posted;
                peer.recvs.pop();
                peer.refused_request.store(true);
                peer.down.store(true);
                ibv_wc& theirs = s_->arriving(peer_);
                theirs = {};
                theirs.wr_id = rv.wr_id;
                theirs.qp_num = peer.qp_num;
                theirs.status = IBV_WC_WR_FLUSH_ERR;
                s_->arrived(peer_);
                return IBV_WC_REM_ACCESS_ERR;
            }
            dst = reinterpret_cast<std::byte*>(wr.wr.rdma.remote_addr);
        }
        const Recv rv = *posted;
        peer.recvs.pop();
        if (!write) {
            if (total > (rv.has_sge ? rv.sge.length : 0)) {
                ibv_wc& theirs = s_->arriving(peer_);
                theirs.wr_id = rv.wr_id;
                theirs.qp_num = peer.qp_num;
                theirs.status = IBV_WC_LOC_LEN_ERR;
                peer.down.store(true);
                s_->arrived(peer_);
                return IBV_WC_REM_INV_REQ_ERR;
            }
            dst = reinterpret_cast<std::byte*>(rv.sge.addr);
        }
        for (int i = 0; i < wr.num_sge; ++i) {
            std::memcpy(dst, reinterpret_cast<const void*>(wr.sg_list[i].addr), wr.sg_list[i].length);
            dst += wr.sg_list[i].length;
        }
        bump(me.copied, total);
        ibv_wc& theirs = s_->arriving(peer_);
        theirs.wr_id = rv.wr_id;
        theirs.qp_num = peer.qp_num;
        theirs.status = IBV_WC_SUCCESS;
        theirs.opcode = write ? IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
        theirs.byte_len = static_cast<std::uint32_t>(total);
        if (wr.opcode != IBV_WR_SEND) { // a plain SEND (only a hostile peer's) carries no immediate
            theirs.imm_data = wr.imm_data;
            theirs.wc_flags = IBV_WC_WITH_IMM;
        }
        s_->arrived(peer_);
        return IBV_WC_SUCCESS;
    }

    // Sleeps on the end's readiness and the stream end's waker at once.
    // What a wait returns without sleeping: completions, a held event, a
    // connection event (as CompletionPoller: what the peer sent before the
    // event may have completed since the CQ was found empty; it goes first).
    std::optional<Waited> look(std::span<ibv_wc> out) {
        if (std::size_t n = poll(out); n > 0) return Waited{Waited::kCompletions, n, {}};
        if (held_event_) return Waited{Waited::kCmEvent, 0, std::exchange(held_event_, std::nullopt)};
        if (auto ev = next_event()) {
            if (std::size_t n = poll(out); n > 0) {
                held_event_ = std::move(ev);
                return Waited{Waited::kCompletions, n, {}};
            }
            return Waited{Waited::kCmEvent, 0, std::move(ev)};
        }
        return std::nullopt;
    }

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
        std::lock_guard lock(s_->control);
        if (std::size_t{slot_count} * slot_size >= s_->slow_from) delay = s_->slow_delay;
    }
    std::this_thread::sleep_for(delay); // pinning: this end does nothing else meanwhile
    return std::make_unique<FabricRing>(s_, side_, slot_count, slot_size, windows);
}

} // namespace

void MemoryFabric::without_windows() { state_->have_windows.store(false); }

void MemoryFabric::refuse_next_send(int side, int err) { state_->ends[side].refuse_send.store(err); }
void MemoryFabric::cut() { state_->cut.store(true); }
void MemoryFabric::hang() { state_->hung.store(true); }

MemoryFabric::MemoryFabric() : state_(std::make_shared<State>()) {
    state_->ends[0].qp_num = 1;
    state_->ends[1].qp_num = 2;
}

MemoryFabric::~MemoryFabric() = default;

std::unique_ptr<Datapath> MemoryFabric::end(int side, PollMode mode, Waker* waker) {
    std::lock_guard lock(state_->control);
    if (side < 0 || side > 1 || state_->ends[side].taken) {
        throw std::logic_error(fmt::format("harness: end {} is not free", side));
    }
    state_->ends[side].taken = true;
    state_->ends[side].sleeps.store(mode == PollMode::kEvent, std::memory_order_relaxed);
    return std::make_unique<FabricEnd>(state_, side, mode, waker);
}

void MemoryFabric::slow_registration(std::size_t bytes, std::chrono::milliseconds delay) {
    std::lock_guard lock(state_->control);
    state_->slow_from = bytes;
    state_->slow_delay = delay;
}

std::uint64_t MemoryFabric::writes_posted(int side) const noexcept {
    return state_->ends[side].writes.load(std::memory_order_relaxed);
}

std::uint64_t MemoryFabric::sends_posted(int side) const noexcept {
    return state_->ends[side].sends.load(std::memory_order_relaxed);
}

std::uint64_t MemoryFabric::copied_bytes() const noexcept {
    return state_->ends[0].copied.load(std::memory_order_relaxed) + state_->ends[1].copied.load(std::memory_order_relaxed);
}

} // namespace rdmastream::harness
