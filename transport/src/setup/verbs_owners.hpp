// SPDX-License-Identifier: LGPL-2.1-or-later
// One owning handle per rdma_cm / verbs object.
//
// Each is a std::unique_ptr with a deleter that releases the object and never
// throws (a failing destroy is logged to stderr: it means a child object is
// still alive, which is a bug in the owner's member order). Declare members so
// that children die first: a memory window before its QP and MR, QP before
// CQ, CQ before completion channel, MR before PD, everything before the
// cm_id, the cm_id before its event channel.
#pragma once

#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

#include <memory>

namespace rdmastream {

namespace detail {
void report_destroy_failure(const char* call, int rc) noexcept;

// rdma_destroy_event_channel returns nothing to check.
struct EventChannelDeleter {
    void operator()(rdma_event_channel* ch) const noexcept { rdma_destroy_event_channel(ch); }
};
struct CmIdDeleter {
    void operator()(rdma_cm_id* id) const noexcept {
        if (int rc = rdma_destroy_id(id); rc != 0) report_destroy_failure("rdma_destroy_id", errno);
    }
};
struct PdDeleter {
    void operator()(ibv_pd* pd) const noexcept {
        if (int rc = ibv_dealloc_pd(pd); rc != 0) report_destroy_failure("ibv_dealloc_pd", rc);
    }
};
struct CompChannelDeleter {
    void operator()(ibv_comp_channel* ch) const noexcept {
        if (int rc = ibv_destroy_comp_channel(ch); rc != 0)
            report_destroy_failure("ibv_destroy_comp_channel", rc);
    }
};
struct CqDeleter {
    void operator()(ibv_cq* cq) const noexcept {
        if (int rc = ibv_destroy_cq(cq); rc != 0) report_destroy_failure("ibv_destroy_cq", rc);
    }
};
struct MrDeleter {
    void operator()(ibv_mr* mr) const noexcept {
        if (int rc = ibv_dereg_mr(mr); rc != 0) report_destroy_failure("ibv_dereg_mr", rc);
    }
};
// A memory window: deallocated before the QP it is bound to (type 2) goes,
// and before the MR it is bound over (a bound window keeps both in use).
struct MwDeleter {
    void operator()(ibv_mw* mw) const noexcept {
        if (int rc = ibv_dealloc_mw(mw); rc != 0) report_destroy_failure("ibv_dealloc_mw", rc);
    }
};
// A QP made by rdma_create_qp belongs to its cm_id; the owner holds the id.
// rdma_destroy_qp returns nothing to check.
struct CmQpDeleter {
    void operator()(rdma_cm_id* id) const noexcept { rdma_destroy_qp(id); }
};
} // namespace detail

using EventChannel = std::unique_ptr<rdma_event_channel, detail::EventChannelDeleter>;
using CmId = std::unique_ptr<rdma_cm_id, detail::CmIdDeleter>;
using ProtectionDomain = std::unique_ptr<ibv_pd, detail::PdDeleter>;
using CompletionChannel = std::unique_ptr<ibv_comp_channel, detail::CompChannelDeleter>;
using CompletionQueue = std::unique_ptr<ibv_cq, detail::CqDeleter>;
using MemoryRegion = std::unique_ptr<ibv_mr, detail::MrDeleter>;
using MemoryWindow = std::unique_ptr<ibv_mw, detail::MwDeleter>;
using CmQueuePair = std::unique_ptr<rdma_cm_id, detail::CmQpDeleter>;

} // namespace rdmastream
