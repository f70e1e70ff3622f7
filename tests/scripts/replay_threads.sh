#!/usr/bin/env bash
# Replay's threads (a thread per rank, one per stream, the emulated link's sleeps, the ranks'
# common start) change nothing but time: a tensor-parallel GPT with its collectives on comm
# streams and its forward collective matmuls cut into sends and receives replays, with and without
# an emulated link, to the bits of the single-stream replay and of the fuse-only rewrite (`check`);
# scripts/test.sh also runs it on the ThreadSanitizer build, where any report fails it.
set -u
SPOPT=$(realpath "$1")
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail=0
bad() { echo "FAIL: $*"; fail=1; }
"$SPOPT" gen gpt --tp 2 --layers 1 --hidden 64 --heads 2 --seq 32 --batch 2 --sequence-parallel -o "$tmp/in.json" >/dev/null || exit 1
"$SPOPT" rewrite "$tmp/in.json" "$tmp/fuse.json" --passes=fuse-allreduce-split 2>/dev/null || exit 1
"$SPOPT" rewrite "$tmp/in.json" "$tmp/chain.json" \
  "--passes=fuse-allreduce-split,regather-activations,decompose-collective-matmul{mode=always},overlap-collectives" 2>/dev/null || exit 1
grep -q 'send_v2' "$tmp/chain.json" || bad "the chain has no sends: decompose-collective-matmul cut nothing"
grep -q '"execution_stream":"comm_ring_' "$tmp/chain.json" || bad "the chain has no comm stream"
digest() { grep -E 'checksum' | sed -E 's/ +min .*//'; }
"$SPOPT" replay "$tmp/chain.json" --single-stream 2>/dev/null | digest > "$tmp/one.txt" || bad "single-stream replay"
"$SPOPT" replay "$tmp/chain.json" 2>/dev/null | digest > "$tmp/streams.txt" || bad "streamed replay"
"$SPOPT" replay "$tmp/chain.json" --link 1,20 2>/dev/null | digest > "$tmp/link.txt" || bad "streamed replay with a link"
[ -s "$tmp/one.txt" ] || bad "replay printed no checksums"
cmp -s "$tmp/one.txt" "$tmp/streams.txt" || bad "streams changed the bits"
cmp -s "$tmp/one.txt" "$tmp/link.txt" || bad "the emulated link changed the bits"
"$SPOPT" check "$tmp/fuse.json" "$tmp/chain.json" --link 1,20 >/dev/null 2>&1 || bad "check fuse vs chain"
[ $fail = 0 ] && echo "ok: replay's threads change no bit"
exit $fail
