# bench/options_lib.sh — sourced by the bench scripts that take options:
#
#   bench_options USAGE SPEC... -- "$@"
#
# Each SPEC is --flag=VAR (the flag takes a value: --flag VALUE sets VAR) or --flag=VAR=VALUE
# (a switch: --flag sets VAR to VALUE). Any other argument, or a flag without its value, prints
# "usage: USAGE" and exits 2.
bench_options() {
  local usage=$1 spec var
  shift
  local -A takes=() sets=()
  while [[ $# -gt 0 && $1 != -- ]]; do
    spec=${1#*=}
    if [[ $spec == *=* ]]; then sets[${1%%=*}]=$spec; else takes[${1%%=*}]=$spec; fi
    shift
  done
  shift  # the --
  while [[ $# -gt 0 ]]; do
    if [[ -n ${sets[$1]:-} ]]; then
      printf -v "${sets[$1]%%=*}" '%s' "${sets[$1]#*=}"
      shift
    elif [[ -n ${takes[$1]:-} && $# -ge 2 ]]; then
      printf -v "${takes[$1]}" '%s' "$2"
      shift 2
    else
      echo "usage: $usage" >&2
      exit 2
    fi
  done
}
