#!/usr/bin/env python3
"""Writes the seed corpora of the fuzz harnesses into fuzz/corpus/NAME/ (committed; rerun only
to change them). Standard library only, deterministic (fixed seeds). Each seed follows the
input layout documented at the top of its harness, fuzz/NAME_fuzz.cc.

    python3 fuzz/make_seeds.py
"""
import os
import pathlib
import random
import struct

ROOT = pathlib.Path(__file__).resolve().parent / "corpus"
rng = random.Random(20240613)


def put(name, seed_name, data):
    d = ROOT / name
    d.mkdir(parents=True, exist_ok=True)
    (d / seed_name).write_bytes(bytes(data))


# ---- codec: [format u8][block u16][dtype u8][flags u8][seed u64][count u16][wire] ----------
def codec_seed(fmt, block, dtype, flags, count, wire_len):
    head = struct.pack("<BHBBQH", fmt, block - 16, dtype, flags, rng.getrandbits(64), count)
    # Plausible scales (small positive floats) then random codes.
    wire = bytearray()
    while len(wire) < wire_len:
        wire += struct.pack("<f", rng.uniform(1e-3, 1.0)) if rng.random() < 0.3 else bytes([rng.getrandbits(8)])
    return head + wire[:wire_len]


for fmt in range(8):
    for block, count in ((16, 40), (64, 130), (128, 128), (33, 100)):
        for dtype in range(3):
            flags = rng.getrandbits(8)
            put("codec", f"f{fmt}_b{block}_t{dtype}", codec_seed(fmt, block, dtype, flags, count, 4 * count + 64))

# ---- npy ------------------------------------------------------------------------------------
def npy(descr, shape, data, version=(1, 0), fortran=False, extra=""):
    shape_txt = "(" + "".join(f"{s}, " for s in shape).rstrip(", ") + ("," if len(shape) == 1 else "") + ")"
    header = f"{{'descr': '{descr}', 'fortran_order': {fortran}, 'shape': {shape_txt}, {extra}}}"
    lenfmt = "<H" if version[0] == 1 else "<I"
    pre = 6 + 2 + struct.calcsize(lenfmt)
    total = pre + len(header) + 1
    header += " " * ((64 - total % 64) % 64) + "\n"
    return b"\x93NUMPY" + bytes(version) + struct.pack(lenfmt, len(header)) + header.encode() + data


def floats(n, fmt="<f"):
    return b"".join(struct.pack(fmt, rng.gauss(0, 1)) for _ in range(n))


put("npy", "f32_2x3", npy("<f4", (2, 3), floats(6)))
put("npy", "f16_7", npy("<f2", (7,), floats(7, "<e")))
put("npy", "f32_scalar", npy("<f4", (), floats(1)))
put("npy", "f32_empty", npy("<f4", (0, 5), b""))
put("npy", "f32_v2", npy("<f4", (4,), floats(4), version=(2, 0)))
put("npy", "f32_v3", npy("<f4", (3, 1), floats(3), version=(3, 0)))
put("npy", "fortran", npy("<f4", (2, 2), floats(4), fortran=True))
put("npy", "f64", npy("<f8", (2,), floats(2, "<d")))
put("npy", "truncated", npy("<f4", (100,), floats(3)))
put("npy", "huge_shape", npy("<f4", (1 << 40, 1 << 40), b""))


# ---- gguf -----------------------------------------------------------------------------------
def gstr(s):
    b = s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, version=3, align=32):
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for key, typ, payload in kvs:
        out += gstr(key) + struct.pack("<I", typ) + payload
    offset, blobs = 0, []
    for name, dims, ttype, raw in tensors:
        out += gstr(name) + struct.pack("<I", len(dims)) + b"".join(struct.pack("<Q", d) for d in dims)
        out += struct.pack("<IQ", ttype, offset)
        blobs.append(raw + b"\0" * ((-len(raw)) % align))
        offset += len(blobs[-1])
    out += b"\0" * ((-len(out)) % align)
    return out + b"".join(blobs)


def str_array(items):
    return struct.pack("<IQ", 8, len(items)) + b"".join(gstr(s) for s in items)


def f32_array(items):
    return struct.pack("<IQ", 6, len(items)) + b"".join(struct.pack("<f", x) for x in items)


def i32_array(items):
    return struct.pack("<IQ", 5, len(items)) + b"".join(struct.pack("<i", x) for x in items)


PIECES = ["<pad>", "<eos>", "<bos>", "<unk>", "\n", "\n\n", "  ", "\t", "<0x41>", "<0x0A>",
          "\u2581", "\u2581the", "th", "he", "the", "wor", "ld", "\u2581world", "h", "e", "t", "w",
          "o", "r", "l", "d", "H", "\u2581H", "ello", "\u2581Hello"]
TYPES = [3, 3, 3, 2, 4, 4, 4, 4, 6, 6] + [1] * (len(PIECES) - 10)
vocab = [("tokenizer.ggml.model", 8, gstr("llama")),
         ("tokenizer.ggml.tokens", 9, str_array(PIECES)),
         ("tokenizer.ggml.scores", 9, f32_array([-float(i) for i in range(len(PIECES))])),
         ("tokenizer.ggml.token_type", 9, i32_array(TYPES)),
         ("tokenizer.ggml.bos_token_id", 4, struct.pack("<I", 2)),
         ("tokenizer.ggml.unknown_token_id", 4, struct.pack("<I", 3))]
tensors = [("a.weight", [4, 2], 0, floats(8)),
           ("b.weight", [32], 8, struct.pack("<e", 0.5) + bytes(rng.getrandbits(8) for _ in range(32))),
           ("c.weight", [2], 1, floats(2, "<e"))]
put("gguf", "vocab_and_tensors", gguf(vocab, tensors))
put("gguf", "v2_align64", gguf(vocab[:2] + [("general.alignment", 4, struct.pack("<I", 64))], tensors[:1], version=2, align=64))
put("gguf", "no_tensors", gguf(vocab, []))
put("gguf", "kinds", gguf([("u8", 0, b"\x07"), ("i16", 3, b"\xff\xff"), ("f64", 12, struct.pack("<d", 1.5)),
                           ("b", 7, b"\x01"), ("nested", 9, struct.pack("<IQ", 9, 1) + f32_array([1.0, 2.0])),
                           ("i64", 11, struct.pack("<q", -5))], []))


# ---- tokenizer: [pieces u8][bos u16][unk u16][flags u8] pieces [type][score][len][bytes] text
def tok_seed(pieces, types, flags, text):
    out = struct.pack("<BHHB", len(pieces), 2, 3, flags)
    for i, (p, t) in enumerate(zip(pieces, types)):
        b = p.encode()[:15]
        out += struct.pack("<BbB", t, -i % 128, len(b)) + b
    return out + text.encode()


put("tokenizer", "basic", tok_seed(PIECES, TYPES, 0x7F, "Hello  world\n\nthe\tend"))
put("tokenizer", "no_scores", tok_seed(PIECES, TYPES, 0x1E, "the world <0x41> \u00e9\U0001F600"))
put("tokenizer", "bytes_only", tok_seed(["<unk>", "<0x41>", "<0x42>"], [2, 6, 6], 0x0F, "ABAB\xff"))


# ---- socket_frames: [max_msg log2][max_unexp log2][n] n x [tag][bytes u16][wait] then stream
def frame(tag, payload):
    return struct.pack("<QQ", tag, len(payload)) + payload


def frames_seed(limits, recvs, stream):
    out = struct.pack("<BBB", *limits, len(recvs))
    for tag, n, wait in recvs:
        out += struct.pack("<BHB", tag, n, wait)
    return out + stream


put("socket_frames", "two_matched", frames_seed((20, 16), [(1, 8, 1), (2, 4, 0)], frame(1, b"A" * 8) + frame(2, b"BBBB")))
put("socket_frames", "unexpected_first", frames_seed((20, 16), [(2, 4, 1), (1, 8, 0)], frame(1, b"A" * 8) + frame(2, b"BBBB")))
put("socket_frames", "wrong_length", frames_seed((20, 16), [(1, 16, 1)], frame(1, b"A" * 8)))
put("socket_frames", "oversized", frames_seed((10, 8), [(3, 64, 0)], struct.pack("<QQ", 3, 1 << 40)))
put("socket_frames", "parked", frames_seed((20, 6), [(0, 100, 0), (1, 200, 1)], frame(1, b"x" * 200) + frame(0, b"y" * 100)))
put("socket_frames", "truncated", frames_seed((20, 16), [(1, 100, 1)], frame(1, b"z" * 100)[:50]))
put("socket_frames", "zero_length", frames_seed((20, 16), [(1, 0, 1), (1, 0, 0)], frame(1, b"") + frame(1, b"")))


# ---- handshake: HELLO (36) then CHALLENGE (52) then PROOF (36) -------------------------------
hello = b"EQXH" + struct.pack("<IIII", 1, 4, 3, 1) + bytes(range(16))
put("handshake", "hello", hello + b"EQXC" + bytes(48) + b"EQXP" + bytes(32))
put("handshake", "old_hello", b"EQX1" + struct.pack("<III", 4, 3, 1) + bytes(120))
put("handshake", "short", b"EQXH\x01")

# ---- tune_table ------------------------------------------------------------------------------
put("tune_table", "two_sections", b"equarx-tune 1\n# measured\nsection ranks=4 dtype=bf16\nrule 0 ring rs+ag\n"
    b"rule 1048576 full_bidir rs+ag\nsection ranks=8 dtype=f32\nrule 0 ring rs+ag\nrule 65536 two_shot ag\n")
put("tune_table", "semi_rs", b"equarx-tune 1\nsection ranks=3 dtype=f16\nrule 0 semi rs  # comment\n")
put("tune_table", "header_only", b"equarx-tune 1\n")
put("tune_table", "bad_order", b"equarx-tune 1\nsection ranks=2 dtype=bf16\nrule 10 ring rs+ag\n")

# ---- options: [mode u8][text]; mode odd: key\0value\0key\0value for equarxConfigSetOption ----
for i, text in enumerate([
        "algorithm=semi,block=32,scale=bf16",
        "algo=two_shot;codec=int4 rounding=stochastic seed=7",
        "phases=rs+ag,rotation=hadamard,microshards=8,quantize_min_bytes=2M",
        "f32_partials=true,validate=0,timeout_ms=3000,mode=wire",
        "codec=fp8_e4m3,block=4096", "block=17", "codec=bogus", "=,,;"]):
    put("options", f"text{i}", b"\0" + text.encode())
for i, pairs in enumerate([["rotation", "hadamard", "block", "32"], ["scale", "bf16", "algo", "semi"],
                           ["block", "1G"], ["codec", "int8,block=3"], ["nosuch", "1"]]):
    put("options", f"c_api{i}", b"\1" + b"\0".join(p.encode() for p in pairs))

# ---- codec, the packed formats (int6 = 8, int5 = 9): a stream of their own, so that the seeds
# above stay as they were ------------------------------------------------------------------------
rng = random.Random(20261206)
for fmt in (8, 9):
    for block, count in ((16, 40), (64, 130), (128, 128), (33, 100), (100, 100)):
        for dtype in range(3):
            flags = rng.getrandbits(8)
            put("codec", f"f{fmt}_b{block}_t{dtype}", codec_seed(fmt, block, dtype, flags, count, 4 * count + 64))
print("seeds written under", ROOT)
