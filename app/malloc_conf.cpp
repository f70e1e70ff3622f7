// The sp-opt binaries allocate with jemalloc where CMake found it (SPOPT_JEMALLOC), configured by
// this string, which jemalloc reads from the symbol `malloc_conf` as the process starts.
//
// Why: a job's IR is millions of small objects (an op with its slots, attributes and vars is
// dozens of allocations), built while loading and again by every pass that adds ops. Profiled on
// a 100k-op rewrite under glibc's malloc, a quarter of the time went to malloc itself and to page
// faults on fresh 4 KiB pages (about 10 us each on a paravirtualised VM). jemalloc's size classes
// cut the first; thp:always backs its extents with transparent huge pages (where the machine's THP
// mode is "madvise", as Debian's is, memory gets them only when asked), which cuts the second by
// up to 512x. scripts/bench-rewrite.sh shows the effect; README has the figures.
#ifdef SPOPT_JEMALLOC
extern "C" {
const char* malloc_conf = "thp:always,metadata_thp:always";
}
#endif
