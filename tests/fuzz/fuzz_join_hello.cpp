// SPDX-License-Identifier: LGPL-2.1-or-later
// A joining connection's request as a listener reads it (two paths): the
// first input byte says whose hello follows (bit 0: a receiver's, else a
// sender's) and whether the listener has a key (bit 1); the rest is the
// connect request's private data. wire::read_join on it, then
// Handshake::screen_join against one stream (fuzz_join.hpp). What
// read_join takes is a whole, valid hello: re-encoded it is the input's
// bytes, the token those at 48..55; what the screen takes carries the
// stream's token and the listener's key flag. The join proof's decoder is
// fuzz_key_proof's.
#include "fuzz_input.hpp"
#include "fuzz_join.hpp"

#include "wire/handshake.hpp"
#include "wire/wire.hpp"

#include <algorithm>
#include <vector>

namespace wire = rdmastream::wire;
using rdmastream::fuzz::accepted;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    rdmastream::fuzz::Input in(data, size);
    const auto how = in.take<std::uint8_t>();
    const wire::Role from = (how & 1) != 0 ? wire::Role::kReceiver : wire::Role::kSender;
    const wire::Role listener = from == wire::Role::kSender ? wire::Role::kReceiver : wire::Role::kSender;
    const bool have_key = (how & 2) != 0;
    const std::span<const std::byte> hello = in.rest();
    const auto join = accepted([&] { return wire::read_join(from, hello); });
    if (!join) {
        return 0;
    }
    FUZZ_CHECK(hello.size() >= wire::kSenderHelloSize);
    FUZZ_CHECK(((std::to_integer<unsigned>(hello[6]) & 2) != 0) == join->has_value()); // flags bit 1, join
    wire::HelloJoin j;
    if (*join) {
        FUZZ_CHECK(hello.size() >= wire::kJoinHelloSize);
        FUZZ_CHECK(std::equal((*join)->token.begin(), (*join)->token.end(), hello.begin() + 48));
        FUZZ_CHECK(((std::to_integer<unsigned>(hello[6]) & 4) != 0) == (*join)->path_b);
        j = {true, (*join)->path_b, (*join)->token};
    }
    // Every field was checked: the hello's own encoding is the input's bytes.
    const wire::HelloBytes again = from == wire::Role::kSender ? [&] {
        wire::SenderHello h = wire::decode_sender_hello(hello);
        h.join = j;
        return wire::encode(h);
    }()
                                                                : [&] {
        wire::ReceiverHello h = wire::decode_receiver_hello(hello);
        h.join = j;
        return wire::encode(h);
    }();
    FUZZ_CHECK(again.size() <= hello.size() && std::equal(again.begin(), again.end(), hello.begin()));
    if (!*join) {
        return 0;
    }
    const std::vector<std::shared_ptr<const rdmastream::SessionSecret>> streams{rdmastream::fuzz::join_stream()};
    try {
        const auto screened = rdmastream::Handshake::screen_join(listener, have_key, streams, hello, "the peer");
        FUZZ_CHECK(screened.secret == streams[0]);
        FUZZ_CHECK(std::equal(streams[0]->token().begin(), streams[0]->token().end(), hello.begin() + 48));
        FUZZ_CHECK(((std::to_integer<unsigned>(hello[6]) & 1) != 0) == have_key); // the key flags agree
        FUZZ_CHECK(screened.path_b == (*join)->path_b);
    } catch (const rdmastream::UserError&) {
        // Another token, or a key on one end only: refused, as it should be.
    }
    return 0;
}
