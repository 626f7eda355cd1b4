// SPDX-License-Identifier: LGPL-2.1-or-later
// Text built without the heap or stdio, for code that runs inside malloc
// or a signal handler (malloc_count.cpp's line, malloc_trace.cpp's header):
// a fixed buffer, cut short rather than grown.
#pragma once

#include <cstddef>

template <std::size_t N>
struct HeapFreeText {
    char buf[N];
    std::size_t len = 0;
    void add(const char* s) noexcept {
        while (*s != '\0' && len < sizeof buf - 1) buf[len++] = *s++;
    }
    void add(unsigned long long v) noexcept {
        char tmp[24];
        int n = 0;
        do {
            tmp[n++] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0);
        while (n > 0 && len < sizeof buf - 1) buf[len++] = tmp[--n];
    }
};
