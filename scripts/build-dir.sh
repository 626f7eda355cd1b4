# SPDX-License-Identifier: LGPL-2.1-or-later
# Sourced by the scripts that use a build folder: rdmastream_build_dir
# prints ${RDMASTREAM_BUILD_DIR:-build} as an absolute path. A relative
# folder is taken from the project's root (ROOT, default the current
# folder, where every script cds first); an absolute one is kept as it is.
# Absolute matters: the test bed's guests run the programs by these paths
# from their own working folder, so "$PWD/$dir" of an absolute dir names
# nothing there (exit 127).
#   rdmastream_build_dir [ROOT [VARIABLE-VALUE [DEFAULT]]]
# e.g.  build=$(rdmastream_build_dir "$root")
#       asan=$(rdmastream_build_dir "$root" "${RDMASTREAM_SANITIZE_BUILD_DIR:-}" build-asan)
rdmastream_build_dir() {
  local root=${1:-$PWD} dir
  if (($# >= 2)); then dir=${2:-${3:-build}}; else dir=${RDMASTREAM_BUILD_DIR:-build}; fi
  case $dir in
    /*) ;;
    *) dir=$root/$dir ;;
  esac
  # "a/./b", "a//b" and a trailing "/" tidied, nothing resolved: the folder may not exist yet
  while [[ $dir == *//* ]]; do dir=${dir//\/\//\/}; done
  dir=${dir//\/.\//\/}
  [[ $dir == / ]] || dir=${dir%/}
  [[ $dir == */. ]] && dir=${dir%/.}
  printf '%s\n' "$dir"
}
