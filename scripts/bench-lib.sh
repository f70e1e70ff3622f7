# Shared by the scripts/bench-*.sh benchmarks (source it; needs $runs and $dir set).
# measure CMD...: runs CMD $runs times; prints "median_wall_seconds peak_rss_mib max_user_seconds".
measure() {
  local times=() rss=0 user=0 log="$dir/time.log"
  for _ in $(seq "$runs"); do
    /usr/bin/time -v "$@" > /dev/null 2> "$log" || { echo "failed: $*" >&2; cat "$log" >&2; exit 1; }
    local wall r u
    wall=$(awk -F': ' '/Elapsed \(wall clock\)/ {n = split($2, p, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + p[i]; print s}' "$log")
    r=$(awk -F': ' '/Maximum resident set size/ {print $2}' "$log")
    u=$(awk -F': ' '/User time \(seconds\)/ {print $2}' "$log")
    times+=("$wall")
    (( r > rss )) && rss=$r
    user=$(awk -v a="$user" -v b="$u" 'BEGIN {print (b > a ? b : a)}')
  done
  local median
  median=$(printf '%s\n' "${times[@]}" | sort -g | awk '{a[NR] = $1} END {print a[int((NR + 1) / 2)]}')
  echo "$median $((rss / 1024)) $user"
}
