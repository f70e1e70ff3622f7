#!/usr/bin/env python3
"""Counts pixels of given colours in a PNG, without PIL: decodes 8-bit RGB/RGBA PNGs (zlib and the
five scanline filters of the PNG spec). Used by html_view.sh to check a browser screenshot.
Usage: png_colors.py FILE.png NAME=#rrggbb ...   prints "size WxH", "non-white N", "NAME N" lines.
"""
import struct, sys, zlib

def decode(path):
    data = open(path, "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise SystemExit(f"{path}: not a PNG")
    pos, idat, header = 8, [], None
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            header = struct.unpack(">IIBBBBB", body)
        elif kind == b"IDAT":
            idat.append(body)
        pos += 12 + length
    width, height, depth, color, _, _, interlace = header
    if depth != 8 or color not in (2, 6) or interlace:
        raise SystemExit(f"{path}: unsupported PNG (depth {depth}, colour type {color}, interlace {interlace})")
    bpp = 3 if color == 2 else 4
    raw = zlib.decompress(b"".join(idat))
    stride = width * bpp
    rows, prev = [], bytearray(stride)
    for y in range(height):
        f = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        for i in range(stride):
            a = line[i - bpp] if i >= bpp else 0
            b = prev[i]
            c = prev[i - bpp] if i >= bpp else 0
            if f == 1: line[i] = (line[i] + a) & 255
            elif f == 2: line[i] = (line[i] + b) & 255
            elif f == 3: line[i] = (line[i] + ((a + b) >> 1)) & 255
            elif f == 4:
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        rows.append(bytes(line))
        prev = line
    return width, height, bpp, rows

def main():
    path, wanted = sys.argv[1], {}
    for arg in sys.argv[2:]:
        name, _, hexcolor = arg.partition("=")
        wanted[name] = tuple(int(hexcolor.lstrip("#")[i:i + 2], 16) for i in (0, 2, 4))
    width, height, bpp, rows = decode(path)
    counts = {name: 0 for name in wanted}
    non_white = 0
    for line in rows:
        for x in range(0, width * bpp, bpp):
            px = (line[x], line[x + 1], line[x + 2])
            if px != (255, 255, 255):
                non_white += 1
                for name, c in wanted.items():
                    if abs(px[0] - c[0]) <= 3 and abs(px[1] - c[1]) <= 3 and abs(px[2] - c[2]) <= 3:
                        counts[name] += 1
    print(f"size {width}x{height}")
    print(f"non-white {non_white}")
    for name, n in counts.items():
        print(f"{name} {n}")

if __name__ == "__main__":
    main()
