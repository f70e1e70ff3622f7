#!/usr/bin/env python3
"""Regenerates the bad-input corpus testdata/bad/*.json from the hand-written 2-rank job.

Each case is one defect; testdata/bad/NAME.expected holds the exact one-line message that
`sp-opt validate NAME.json` must print (reviewed by hand, then committed).
SCHEMA_REJECTS lists the cases that the JSON Schema alone can reject.
"""
import copy, json, pathlib

root = pathlib.Path(__file__).resolve().parent.parent
base = json.loads((root / "testdata/jobs/hand_tp2_legacy.json").read_text())
out = root / "testdata/bad"
out.mkdir(exist_ok=True)
schema_rejects = []

def job():
    return copy.deepcopy(base)

def write(name, obj=None, text=None, schema=False):
    data = text if text is not None else json.dumps(obj, indent=1)
    (out / f"{name}.json").write_bytes(data if isinstance(data, bytes) else data.encode())
    if schema:
        schema_rejects.append(name)

good_text = json.dumps(base, indent=1)
write("malformed", text='{"format": "sp-opt.program", "version": 1,, "world_size": 2}')
write("truncated", text=good_text[: len(good_text) // 2])
write("empty", text="")
write("not_an_object", text="[1, 2, 3]\n", schema=True)
write("trailing_content", text=good_text + "\n{}\n")
write("bad_atom_in_unknown_key", text=good_text.replace('"exporter": {', '"exporter": {"flags": [1, tru], '))
write("invalid_utf8", text=good_text.encode().replace(b'"hand"', b'"h\xff\xfe"'))

j = job(); j["world_size"] = "2"; write("wrong_type_world_size", j, schema=True)
j = job(); j["format"] = "paddle.program"; write("unknown_format", j, schema=True)
j = job(); j["version"] = 2; write("unknown_version", j, schema=True)
j = job(); del j["programs"][0]["blocks"][0]["vars"][2]["dtype"]; write("var_without_dtype", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["dtype"] = "float8"; write("unknown_dtype", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["shape"] = [4, -3]; write("negative_shape", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["shape"] = [4, 10**15]; write("absurd_shape", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["shape"] = [4.0, 3]; write("float_in_shape", j)  # 4.0 is an "integer" to JSON Schema
j = job(); j["programs"][1]["blocks"][0]["ops"][3]["inputs"]["X"] = ["h_3"]; write("dangling_var", j)
j = job(); j["programs"][1]["rank"] = 0; write("duplicate_rank", j)
j = job(); j["programs"][1]["rank"] = 5; write("rank_outside_world", j)
j = job(); j["process_groups"][0]["ranks"] = [0, 1, 1]; write("group_repeated_rank", j, schema=True)
j = job(); j["process_groups"][0]["ranks"] = [0, 2]; write("group_rank_outside_world", j)
j = job(); j["process_groups"].append({"ring_id": 0, "ranks": [0]}); write("duplicate_ring_id", j)
j = job(); j["programs"][0]["blocks"][0]["ops"][1]["attrs"]["ring_id"] = 7; write("unknown_ring_id", j)
j = job()
ops = j["programs"][1]["blocks"][0]["ops"]
ops[1]["type"] = "c_allgather"; ops[1]["attrs"]["nranks"] = 2
j["programs"][1]["blocks"][0]["vars"][3]["shape"] = [8, 5]
ops[2]["attrs"]["num"] = 4
ops[2]["outputs"]["Out"] = ["y_0", "y_1", "y_2", "y_3"]
j["programs"][1]["blocks"][0]["vars"] += [{"name": "y_2", "shape": [2, 5], "dtype": "float32"},
                                          {"name": "y_3", "shape": [2, 5], "dtype": "float32"}]
write("collective_order_mismatch", j)
j = job(); j["programs"][1]["blocks"][0]["vars"][1]["shape"] = [4, 5]; write("matmul_inner_dims", j)
# (the gelu then reads y_1, whose [2,5] its output has: the split is the one defect)
j = job(); j["programs"][0]["blocks"][0]["vars"][4]["shape"] = [3, 5]; j["programs"][0]["blocks"][0]["ops"][3]["inputs"]["X"] = ["y_1"]; write("split_sizes", j)
j = job(); j["programs"][0]["fetch"] = ["nope"]; write("fetch_undeclared", j)
j = job(); j["programs"][0]["blocks"][0]["vars"].append(dict(j["programs"][0]["blocks"][0]["vars"][2])); write("var_declared_twice", j)
j = job(); j["programs"][0]["blocks"][0]["parent_idx"] = 3; write("missing_parent_block", j)
j = job(); j["programs"][0]["blocks"][0]["ops"][0]["attrs"] = "none"; write("attrs_not_object", j, schema=True)
j = job(); del j["programs"][0]["blocks"][0]["ops"][0]["type"]; write("op_without_type", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["idx"] = -1; write("negative_block_idx", j, schema=True)
j = job(); j["programs"][1]["blocks"][0]["ops"][1]["attrs"]["nranks"] = "2"; write("nranks_not_integer", j, schema=True)
# Reserved keys of the wrong kind (verify/reserved_keys.h): each reader would take them as absent.
j = job(); j["programs"][0]["blocks"][0]["ops"][0]["attrs"]["op_role"] = "forward"; write("op_role_not_integer", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["ops"][1]["dist_attr"] = {"execution_stream": "comm_0", "events_to_wait": "ev_0"}
write("events_to_wait_not_array", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["dist_attr"]["dims_mapping"] = ["x", -1]; write("dims_mapping_not_integers", j, schema=True)
j = job(); j["programs"][0]["blocks"][0]["vars"][0]["dist_attr"]["process_mesh"]["process_ids"] = [0, -1]
write("mesh_negative_process_id", j, schema=True)
# 5000 nested arrays inside a key no one knows: must be refused without exhausting the stack.
write("deep_nesting", text=good_text.replace('"exporter": {', '"exporter": {"deep": ' + "[" * 5000 + "]" * 5000 + ", ", 1))

(out / "SCHEMA_REJECTS").write_text("\n".join(sorted(schema_rejects)) + "\n")
