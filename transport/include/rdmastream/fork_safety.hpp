// SPDX-License-Identifier: LGPL-2.1-or-later
// Registered memory and fork(2): the program's choice, made once at start.
//
// On kernels before 5.13 a fork() after memory is registered breaks it: the
// parent's first write to a registered page after the fork copies the page
// (copy-on-write), and the NIC goes on reading and writing the old one, now
// the child's. ibv_fork_init(3) avoids that by marking every registration
// MADV_DONTFORK, which costs an madvise(2) and a range lookup per
// registration and deregistration, and leaves the child without those pages.
// Newer kernels copy pinned pages for the child themselves; there the call
// does nothing (ibv_is_fork_initialized() says IBV_FORK_UNNEEDED).
//
// The library never decides this for a program (a side effect in some
// constructor nobody reads would apply to every user, forking or not): a
// program that forks while it holds registered memory (directly, or through
// a library that does, as GStreamer spawns its plugin scanner) calls
// enable_fork_safety() first thing, before any connection or registration.
// rdmarecv and the GStreamer plugin do; rdmasend does not fork.
#pragma once

namespace rdmastream {

// Makes later registrations fork-safe where the kernel needs it; a no-op
// where it does not, and when called again. Throws SystemError naming
// ibv_fork_init if it fails (EINVAL: memory was registered before it).
void enable_fork_safety();

} // namespace rdmastream
