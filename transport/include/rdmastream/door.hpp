// SPDX-License-Identifier: LGPL-2.1-or-later
// Where a stream end meets its peer: an address to dial, or a listener bound
// to a local address. Sender::open and Receiver::open go through a Door; the
// same listening Door serves one stream after another (the next sender once
// a stream ended, or once the last one was refused).
//
// A listening Door is a service: a peer it refuses (not on the allow list,
// bad private data, a handshake it abandons, no first frame in time) is
// logged in one line naming its address and the reason, and the next one
// is served; while a single-peer stream is open through it, every other
// peer that dials is refused "busy" at once. Nothing is allocated for a
// peer before its address and hello pass.
#pragma once

#include "rdmastream/allow_list.hpp"
#include "rdmastream/endpoint.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace rdmastream {

// How many peers a listening Door takes through their handshakes at once.
// Each pending peer has its own deadline (5 s to complete its connect
// request, then the handshake timeout for its key proof and ring advert), so
// a flood of connect requests that never complete ties up at most these
// many, and from one address at most `per_address`: a genuine peer is
// served meanwhile. A request from an address at its bound makes room by
// dropping that address's oldest request not yet connected; one past
// `total` drops the oldest not yet connected of the address with most
// pending; with none to drop it is refused "busy". docs/protocol.md
// ("Listening: pending handshakes") has the whole policy.
struct PendingLimits {
    std::size_t total = 32;
    std::size_t per_address = 4;
};

class Door {
public:
    using LogFn = std::function<void(const std::string&)>;

    // Dials `peer` when a stream end is opened, retrying while nobody
    // listens there yet.
    static Door dial(const Endpoint& peer);
    // Binds and listens on `local` now: a port in use is a UserError naming
    // it; a missing RDMA device one that names the fix. `allow` empty:
    // everyone may connect. `log` gets one line per refused peer
    // ("refused 198.18.0.2:40123: ..."); empty: stderr. `pending`: both
    // bounds at least 1, per_address at most total (a UserError otherwise).
    static Door listen(const Endpoint& local, AllowList allow = {}, LogFn log = {}, PendingLimits pending = {});

    Door(Door&&) noexcept;
    Door& operator=(Door&&) noexcept;
    ~Door();

    bool listening() const noexcept;
    // Listening: the port bound (the one the kernel chose for port 0);
    // dialing: the peer's.
    std::uint16_t port() const;
    // "198.18.0.2:7000", or "*:7000" for a listener on every address.
    std::string describe() const;
    const AllowList& allow() const noexcept;
    PendingLimits pending_limits() const noexcept;

    struct Impl;
    Impl& impl() const noexcept { return *impl_; } // the library's own

private:
    friend class Sender;
    friend class Receiver;
    explicit Door(std::shared_ptr<Impl> impl) noexcept;
    std::shared_ptr<Impl> impl_; // shared with the stream ends it opened (busy refusals)
};

} // namespace rdmastream
