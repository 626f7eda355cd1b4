// SPDX-License-Identifier: LGPL-2.1-or-later
// rdmastream-mw-probe: do type 2 memory windows work on this RDMA device, and
// what do they cost per frame? (docs/security.md, "Writes outside credits".)
//
// The ring is one REMOTE_WRITE region today, so a sender can write into a
// slot the consumer still holds. With memory windows the ring's region would
// be registered LOCAL_WRITE | MW_BIND only (no remote access of its own), a
// type 2 window bound over one slot when that slot's credit goes out
// (IBV_WR_BIND_MW), and invalidated (IBV_WR_LOCAL_INV) when the frame is
// handed on: the sender could then write only slots it holds a credit for.
//
// One process, two RC queue pairs on the same device connected to each other
// by hand (no rdma_cm): "sender" A writes, "receiver" B owns the ring and
// binds and invalidates. It checks, each on a fresh pair where the check
// breaks the queue pair:
//   1. a write through the bound window lands, byte for byte;
//   2. a write through the ring region's own rkey is refused (remote access
//      error): the region grants nothing remote by itself;
//   3. a write past the window (the next slot) is refused;
//   4. a write through the window after LOCAL_INV is refused;
// and measures, in the same run, a frame cycle with a plain write (to an
// ordinary REMOTE_WRITE region) against one with bind + write + invalidate,
// alternating in blocks. Exit 0: windows work; 1: a step failed (the line
// names the call and errno or completion status); 2: bad usage.
#include <infiniband/verbs.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

using Clock = std::chrono::steady_clock;

struct Failure : std::runtime_error {
    using std::runtime_error::runtime_error;
};

[[noreturn]] void fail_errno(const char* call, int err) {
    throw Failure(std::string(call) + " failed: " + std::strerror(err) + " (errno " + std::to_string(err) + ")");
}
template <typename T>
T* check_ptr(T* p, const char* call) {
    if (p == nullptr) fail_errno(call, errno);
    return p;
}
void check_rc(int rc, const char* call) {
    if (rc != 0) fail_errno(call, rc);
}

struct Options {
    std::string device;
    int gid_index = -1;
    std::size_t size = 3110400; // one 1080p I420 frame
    int frames = 200;           // per mode
};

// One completion from `cq`, busy-polled; throws after 10 s.
ibv_wc poll_one(ibv_cq* cq, const char* what) {
    const auto deadline = Clock::now() + std::chrono::seconds(10);
    ibv_wc wc{};
    for (;;) {
        const int n = ibv_poll_cq(cq, 1, &wc);
        if (n < 0) throw Failure(std::string("ibv_poll_cq failed while waiting for ") + what);
        if (n == 1) return wc;
        if (Clock::now() > deadline) throw Failure(std::string("no completion within 10 s for ") + what);
    }
}

ibv_wc expect_success(ibv_cq* cq, const char* what) {
    const ibv_wc wc = poll_one(cq, what);
    if (wc.status != IBV_WC_SUCCESS) {
        throw Failure(std::string(what) + ": completion status " + ibv_wc_status_str(wc.status) + " (" +
                      std::to_string(wc.status) + ", vendor_err " + std::to_string(wc.vendor_err) + ")");
    }
    return wc;
}

struct Device {
    ibv_context* ctx = nullptr;
    ibv_pd* pd = nullptr;
    ibv_port_attr port{};
    ibv_gid gid{};
    int gid_index = 0;
    ibv_device_attr attr{};

    explicit Device(const Options& o) {
        int n = 0;
        ibv_device** list = check_ptr(ibv_get_device_list(&n), "ibv_get_device_list");
        ibv_device* pick = nullptr;
        for (int i = 0; i < n; ++i) {
            if (o.device.empty() || o.device == ibv_get_device_name(list[i])) {
                pick = list[i];
                break;
            }
        }
        if (pick == nullptr) {
            ibv_free_device_list(list);
            throw Failure(o.device.empty() ? "no RDMA device" : "no RDMA device " + o.device);
        }
        ctx = check_ptr(ibv_open_device(pick), "ibv_open_device");
        ibv_free_device_list(list);
        pd = check_ptr(ibv_alloc_pd(ctx), "ibv_alloc_pd");
        check_rc(ibv_query_device(ctx, &attr), "ibv_query_device");
        check_rc(ibv_query_port(ctx, 1, &port), "ibv_query_port");
        gid_index = o.gid_index >= 0 ? o.gid_index : 1;
        check_rc(ibv_query_gid(ctx, 1, gid_index, &gid), "ibv_query_gid");
    }
    ~Device() {
        ibv_dealloc_pd(pd);
        ibv_close_device(ctx);
    }
    Device(const Device&) = delete;
    Device& operator=(const Device&) = delete;
};

// A: the writing side; B: the ring's side. Each with its own CQ.
struct Pair {
    ibv_cq* cq_a = nullptr;
    ibv_cq* cq_b = nullptr;
    ibv_qp* a = nullptr;
    ibv_qp* b = nullptr;

    explicit Pair(Device& d) {
        cq_a = check_ptr(ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0), "ibv_create_cq");
        cq_b = check_ptr(ibv_create_cq(d.ctx, 256, nullptr, nullptr, 0), "ibv_create_cq");
        a = make_qp(d, cq_a);
        b = make_qp(d, cq_b);
        connect(d, a, b->qp_num);
        connect(d, b, a->qp_num);
    }
    ~Pair() {
        ibv_destroy_qp(a);
        ibv_destroy_qp(b);
        ibv_destroy_cq(cq_a);
        ibv_destroy_cq(cq_b);
    }
    Pair(const Pair&) = delete;
    Pair& operator=(const Pair&) = delete;

    static ibv_qp* make_qp(Device& d, ibv_cq* cq) {
        ibv_qp_init_attr init{};
        init.send_cq = cq;
        init.recv_cq = cq;
        init.qp_type = IBV_QPT_RC;
        init.cap.max_send_wr = 128;
        init.cap.max_recv_wr = 128;
        init.cap.max_send_sge = 1;
        init.cap.max_recv_sge = 1;
        init.sq_sig_all = 0;
        return check_ptr(ibv_create_qp(d.pd, &init), "ibv_create_qp");
    }

    static void connect(Device& d, ibv_qp* qp, std::uint32_t remote_qpn) {
        ibv_qp_attr at{};
        at.qp_state = IBV_QPS_INIT;
        at.pkey_index = 0;
        at.port_num = 1;
        at.qp_access_flags = IBV_ACCESS_REMOTE_WRITE;
        check_rc(ibv_modify_qp(qp, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS),
                 "ibv_modify_qp(INIT)");
        at = {};
        at.qp_state = IBV_QPS_RTR;
        at.path_mtu = d.port.active_mtu;
        at.dest_qp_num = remote_qpn;
        at.rq_psn = 0;
        at.max_dest_rd_atomic = 1;
        at.min_rnr_timer = 12;
        at.ah_attr.is_global = 1;
        at.ah_attr.grh.dgid = d.gid;
        at.ah_attr.grh.sgid_index = static_cast<std::uint8_t>(d.gid_index);
        at.ah_attr.grh.hop_limit = 1;
        at.ah_attr.port_num = 1;
        check_rc(ibv_modify_qp(qp, &at,
                               IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
                                   IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER),
                 "ibv_modify_qp(RTR)");
        at = {};
        at.qp_state = IBV_QPS_RTS;
        at.timeout = 14;
        at.retry_cnt = 7;
        at.rnr_retry = 7;
        at.sq_psn = 0;
        at.max_rd_atomic = 1;
        check_rc(ibv_modify_qp(qp, &at,
                               IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
                                   IBV_QP_MAX_QP_RD_ATOMIC),
                 "ibv_modify_qp(RTS)");
    }
};

struct Region {
    std::vector<std::byte> bytes;
    ibv_mr* mr = nullptr;
    Region(ibv_pd* pd, std::size_t size, int access, const char* call) : bytes(size) {
        mr = check_ptr(ibv_reg_mr(pd, bytes.data(), size, access), call);
    }
    ~Region() { ibv_dereg_mr(mr); }
    Region(const Region&) = delete;
    Region& operator=(const Region&) = delete;
    std::uint64_t addr(std::size_t at = 0) const { return reinterpret_cast<std::uintptr_t>(bytes.data()) + at; }
};

void post_recv(ibv_qp* qp) {
    ibv_recv_wr wr{};
    ibv_recv_wr* bad = nullptr;
    wr.wr_id = 7;
    check_rc(ibv_post_recv(qp, &wr, &bad), "ibv_post_recv");
}

// A WRITE_WITH_IMM of `len` bytes from `src` to (addr, rkey), signalled.
void post_write(ibv_qp* qp, const Region& src, std::size_t len, std::uint64_t addr, std::uint32_t rkey) {
    ibv_sge sge{src.addr(), static_cast<std::uint32_t>(len), src.mr->lkey};
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 1;
    wr.sg_list = &sge;
    wr.num_sge = 1;
    wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
    wr.imm_data = 0;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.wr.rdma.remote_addr = addr;
    wr.wr.rdma.rkey = rkey;
    check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send(RDMA_WRITE_WITH_IMM)");
}

// Binds `mw` over [addr, addr+len) of `mr` for remote write; returns the rkey
// the window now answers to (its key byte incremented, as the spec asks).
std::uint32_t bind(ibv_qp* qp, ibv_cq* cq, ibv_mw* mw, std::uint32_t old_rkey, ibv_mr* mr, std::uint64_t addr,
                   std::size_t len, bool signalled) {
    const std::uint32_t rkey = ibv_inc_rkey(old_rkey);
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 2;
    wr.opcode = IBV_WR_BIND_MW;
    wr.send_flags = signalled ? IBV_SEND_SIGNALED : 0;
    wr.bind_mw.mw = mw;
    wr.bind_mw.rkey = rkey;
    wr.bind_mw.bind_info.mr = mr;
    wr.bind_mw.bind_info.addr = addr;
    wr.bind_mw.bind_info.length = len;
    wr.bind_mw.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
    check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send(IBV_WR_BIND_MW)");
    if (signalled) expect_success(cq, "IBV_WR_BIND_MW");
    // The provider reads the window's current key from mw->rkey in the next
    // bind (rxe's kernel refuses a stale one: "memory management operation
    // error"); for type 2 windows nobody but us updates it.
    mw->rkey = rkey;
    return rkey;
}

void invalidate(ibv_qp* qp, ibv_cq* cq, std::uint32_t rkey) {
    ibv_send_wr wr{};
    ibv_send_wr* bad = nullptr;
    wr.wr_id = 3;
    wr.opcode = IBV_WR_LOCAL_INV;
    wr.send_flags = IBV_SEND_SIGNALED;
    wr.invalidate_rkey = rkey;
    check_rc(ibv_post_send(qp, &wr, &bad), "ibv_post_send(IBV_WR_LOCAL_INV)");
    expect_success(cq, "IBV_WR_LOCAL_INV");
}

// A write that the responder must refuse: the writer sees REM_ACCESS_ERR.
void expect_refused(Pair& p, const Region& src, std::size_t len, std::uint64_t addr, std::uint32_t rkey,
                    const char* what) {
    post_recv(p.b);
    post_write(p.a, src, len, addr, rkey);
    const ibv_wc wc = poll_one(p.cq_a, what);
    if (wc.status != IBV_WC_REM_ACCESS_ERR) {
        throw Failure(std::string(what) + ": expected remote access error, got " + ibv_wc_status_str(wc.status));
    }
    std::printf("ok   %s: refused (%s)\n", what, ibv_wc_status_str(wc.status));
}

struct MwOwner {
    ibv_mw* mw;
    explicit MwOwner(ibv_pd* pd) : mw(check_ptr(ibv_alloc_mw(pd, IBV_MW_TYPE_2), "ibv_alloc_mw(IBV_MW_TYPE_2)")) {}
    ~MwOwner() { ibv_dealloc_mw(mw); }
    MwOwner(const MwOwner&) = delete;
    MwOwner& operator=(const MwOwner&) = delete;
};

double us(Clock::duration d) { return std::chrono::duration<double, std::micro>(d).count(); }

int run(const Options& o) {
    Device d(o);
    const char* name = ibv_get_device_name(d.ctx->device);
    const auto caps = d.attr.device_cap_flags;
    std::printf("device %s, gid index %d, active MTU %d, frame %zu bytes\n", name, d.gid_index,
                128 << d.port.active_mtu, o.size);
    std::printf("device caps: MEM_WINDOW %s, MEM_WINDOW_TYPE_2A %s, TYPE_2B %s, MEM_MGT_EXTENSIONS %s; max_mw %d\n",
                caps & IBV_DEVICE_MEM_WINDOW ? "yes" : "no", caps & IBV_DEVICE_MEM_WINDOW_TYPE_2A ? "yes" : "no",
                caps & IBV_DEVICE_MEM_WINDOW_TYPE_2B ? "yes" : "no",
                caps & IBV_DEVICE_MEM_MGT_EXTENSIONS ? "yes" : "no", d.attr.max_mw);

    const std::size_t slot = o.size;
    // The ring as one region of two slots, no remote access of its own,
    // windows may be bound over it; and the ring as one such region per slot.
    const int bindable = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_MW_BIND;
    Region ring(d.pd, 2 * slot, bindable, "ibv_reg_mr(LOCAL_WRITE | MW_BIND)");
    Region slot0(d.pd, slot, bindable, "ibv_reg_mr(LOCAL_WRITE | MW_BIND)");
    Region slot1(d.pd, slot, bindable, "ibv_reg_mr(LOCAL_WRITE | MW_BIND)");
    // Today's ring: an ordinary REMOTE_WRITE region, for the plain write.
    Region plain(d.pd, slot, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE, "ibv_reg_mr(REMOTE_WRITE)");
    Region src(d.pd, slot, IBV_ACCESS_LOCAL_WRITE, "ibv_reg_mr(source)");
    for (std::size_t i = 0; i < slot; ++i) src.bytes[i] = static_cast<std::byte>(i * 131 + 7);
    bool range_enforced = true;
    // Each check on its own pair; a window is declared after its pair, so it
    // is deallocated (unbound) before the pair's QPs go.
    {
        Pair p(d);
        MwOwner window(d.pd);
        std::printf("ok   ibv_alloc_mw(IBV_MW_TYPE_2): rkey %#x\n", window.mw->rkey);
        const std::uint32_t rkey = bind(p.b, p.cq_b, window.mw, window.mw->rkey, ring.mr, ring.addr(), slot, true);
        std::printf("ok   IBV_WR_BIND_MW over slot 0 of a two-slot region: rkey %#x\n", rkey);
        post_recv(p.b);
        post_write(p.a, src, slot, ring.addr(), rkey);
        expect_success(p.cq_a, "RDMA_WRITE_WITH_IMM through the window");
        expect_success(p.cq_b, "the write's receive at the ring's side");
        if (std::memcmp(ring.bytes.data(), src.bytes.data(), slot) != 0) {
            throw Failure("the write through the window completed but the slot does not hold what was sent");
        }
        std::printf("ok   a write through the window landed, %zu bytes intact\n", slot);
        // Past the window, into slot 1 of the same region.
        post_recv(p.b);
        post_write(p.a, src, 4096, ring.addr(slot), rkey);
        const ibv_wc wc = poll_one(p.cq_a, "a write past the window");
        range_enforced = wc.status == IBV_WC_REM_ACCESS_ERR;
        std::printf("%s a write past the window into slot 1 of the same region: %s\n", range_enforced ? "ok  " : "BAD ",
                    range_enforced ? "refused (remote access error)"
                                   : (std::string(ibv_wc_status_str(wc.status)) +
                                      ": the device checks the region's range, not the window's")
                                         .c_str());
        if (!range_enforced) invalidate(p.b, p.cq_b, rkey);
    }
    {
        Pair p(d);
        MwOwner window(d.pd);
        const std::uint32_t rkey = bind(p.b, p.cq_b, window.mw, window.mw->rkey, slot0.mr, slot0.addr(), slot, true);
        std::printf("ok   IBV_WR_BIND_MW over a one-slot region: rkey %#x\n", rkey);
        expect_refused(p, src, 4096, slot1.addr(), rkey, "a write through it into the next slot's region");
    }
    {
        Pair p(d);
        expect_refused(p, src, 4096, ring.addr(), ring.mr->rkey, "a write through the ring region's own rkey");
    }
    {
        Pair p(d);
        MwOwner window(d.pd);
        const std::uint32_t rkey = bind(p.b, p.cq_b, window.mw, window.mw->rkey, slot0.mr, slot0.addr(), slot, true);
        post_recv(p.b);
        post_write(p.a, src, slot, slot0.addr(), rkey);
        expect_success(p.cq_a, "RDMA_WRITE_WITH_IMM through the window");
        expect_success(p.cq_b, "the write's receive at the ring's side");
        invalidate(p.b, p.cq_b, rkey);
        std::printf("ok   IBV_WR_LOCAL_INV of rkey %#x\n", rkey);
        expect_refused(p, src, 4096, slot0.addr(), rkey, "a write through the window after LOCAL_INV");
    }

    // Cost: a frame cycle (write, its completion at both ends) with a plain
    // region, against bind + the same write through the window + invalidate,
    // each step waited for (the upper bound: in a stream the bind would go out
    // unsignalled with the credit and the invalidate with the release).
    Pair p(d);
    MwOwner window(d.pd);
    std::uint32_t rkey = window.mw->rkey;
    Clock::duration plain_total{}, mw_total{}, bind_inv_total{};
    int plain_n = 0, mw_n = 0;
    constexpr int kBlock = 10;
    for (int done = 0; done < o.frames; done += kBlock) {
        const auto t0 = Clock::now();
        for (int i = 0; i < kBlock; ++i) {
            post_recv(p.b);
            post_write(p.a, src, slot, plain.addr(), plain.mr->rkey);
            expect_success(p.cq_a, "plain write");
            expect_success(p.cq_b, "plain write's receive");
        }
        const auto t1 = Clock::now();
        plain_total += t1 - t0;
        plain_n += kBlock;
        for (int i = 0; i < kBlock; ++i) {
            const auto b0 = Clock::now();
            rkey = bind(p.b, p.cq_b, window.mw, rkey, slot0.mr, slot0.addr(), slot, true);
            bind_inv_total += Clock::now() - b0;
            post_recv(p.b);
            post_write(p.a, src, slot, slot0.addr(), rkey);
            expect_success(p.cq_a, "write through the window");
            expect_success(p.cq_b, "window write's receive");
            const auto i0 = Clock::now();
            invalidate(p.b, p.cq_b, rkey);
            bind_inv_total += Clock::now() - i0;
        }
        mw_total += Clock::now() - t1;
        mw_n += kBlock;
    }
    const double plain_us = us(plain_total) / plain_n, mw_us = us(mw_total) / mw_n,
                 bind_inv_us = us(bind_inv_total) / mw_n;
    std::printf("cost at %zu bytes, %d frames each, alternating blocks of %d:\n", slot, plain_n, kBlock);
    std::printf("  plain write cycle            %10.1f us/frame\n", plain_us);
    std::printf("  bind + write + invalidate    %10.1f us/frame\n", mw_us);
    std::printf("  of which bind + invalidate   %10.1f us/frame\n", bind_inv_us);
    std::printf("  overhead                     %+9.1f %% per frame (bind + invalidate alone: %.1f %% of a plain "
                "cycle)\n",
                100.0 * (mw_us - plain_us) / plain_us, 100.0 * bind_inv_us / plain_us);
    std::printf("RESULT: type 2 memory windows work on %s; %s\n", name,
                range_enforced ? "a window confines writes to its range"
                               : "a window does NOT confine writes to its range, only to its region: one region per "
                                 "slot needed");
    return 0;
}

} // namespace

int main(int argc, char** argv) {
    Options o;
    if (const char* g = std::getenv("RDMABED_GID_INDEX"); g != nullptr && *g != '\0') o.gid_index = std::atoi(g);
    if (const char* dev = std::getenv("RDMABED_DEVICE"); dev != nullptr) o.device = dev;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        const bool has_value = i + 1 < argc;
        if (a == "--device" && has_value) {
            o.device = argv[++i];
        } else if (a == "--gid-index" && has_value) {
            o.gid_index = std::atoi(argv[++i]);
        } else if (a == "--size" && has_value) {
            o.size = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--frames" && has_value) {
            o.frames = std::max(10, std::atoi(argv[++i]));
        } else {
            std::fprintf(stderr,
                         "usage: rdmastream-mw-probe [--device NAME] [--gid-index N] [--size BYTES] [--frames N]\n"
                         "(the bed's RDMABED_DEVICE and RDMABED_GID_INDEX are the defaults)\n");
            return 2;
        }
    }
    if (o.size < 8192) o.size = 8192;
    try {
        return run(o);
    } catch (const Failure& e) {
        std::printf("RESULT: FAILED: %s\n", e.what());
        return 1;
    }
}
