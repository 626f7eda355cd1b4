# SPDX-License-Identifier: LGPL-2.1-or-later
set(RDMASTREAM_TEST_TIMEOUTS)
