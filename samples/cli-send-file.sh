#!/bin/sh
# SPDX-License-Identifier: LGPL-2.1-or-later
# File to RDMA, command-line half one: rdmasend decodes FILE straight into
# registered memory and streams it, at its own pace (--realtime), to an
# rdmarecv (or rdmasrc) listening on HOST. Pair with cli-receive-to-file.sh.
#   samples/cli-send-file.sh HOST FILE [more rdmasend options]
set -eu
host=${1:?usage: $0 HOST FILE [rdmasend options]} file=${2:?usage: $0 HOST FILE [rdmasend options]}
shift 2
exec rdmasend "$file" --connect "$host" --realtime "$@"
