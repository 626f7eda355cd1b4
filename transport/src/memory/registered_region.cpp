// SPDX-License-Identifier: LGPL-2.1-or-later
#include "memory/registered_region.hpp"

#include "rdmastream/error.hpp"

namespace rdmastream {

namespace {
std::size_t nonzero(std::size_t size) {
    if (size == 0) {
        throw UserError("cannot register an empty memory region");
    }
    return size;
}
} // namespace

RegisteredRegion::RegisteredRegion(ibv_pd* pd, std::size_t size, int access)
    : map_(nonzero(size)),
      // A PD the registration does not keep (no owner: the caller's).
      reg_(register_pages(std::shared_ptr<ibv_pd>(std::shared_ptr<ibv_pd>(), pd), map_.bytes(), map_.length(),
                          access)) {}

RegisteredRegion::RegisteredRegion(PageMapping pages, PageRegistration registration) noexcept
    : map_(std::move(pages)), reg_(std::move(registration)) {}

} // namespace rdmastream
