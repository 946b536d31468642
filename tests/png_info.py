#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""png_info.py FILE: prints "WIDTH HEIGHT COLOURS" for an 8-bit RGB or RGBA
PNG, COLOURS being the number of distinct pixel values (a blank page has
1). Standard library only: zlib plus the five PNG row filters (RFC 2083
section 6), written for tests/kv-report.bats."""
import struct
import sys
import zlib


def chunks(data):
    i = 8
    while i < len(data):
        n, kind = struct.unpack(">I4s", data[i:i + 8])
        yield kind, data[i + 8:i + 8 + n]
        i += 12 + n


def paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def unfilter(raw, width, height, bpp):
    stride = width * bpp
    prev = bytearray(stride)
    rows = []
    i = 0
    for _ in range(height):
        f = raw[i]
        row = bytearray(raw[i + 1:i + 1 + stride])
        i += 1 + stride
        for x in range(stride):
            a = row[x - bpp] if x >= bpp else 0
            b = prev[x]
            c = prev[x - bpp] if x >= bpp else 0
            if f == 1:
                row[x] = (row[x] + a) & 255
            elif f == 2:
                row[x] = (row[x] + b) & 255
            elif f == 3:
                row[x] = (row[x] + (a + b) // 2) & 255
            elif f == 4:
                row[x] = (row[x] + paeth(a, b, c)) & 255
        rows.append(bytes(row))
        prev = row
    return rows


def main():
    data = open(sys.argv[1], "rb").read()
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        sys.exit("not a PNG")
    idat = b""
    for kind, body in chunks(data):
        if kind == b"IHDR":
            width, height, depth, ctype = struct.unpack(">IIBB", body[:10])
        elif kind == b"IDAT":
            idat += body
    if depth != 8 or ctype not in (2, 6):
        sys.exit("not 8-bit RGB(A)")
    bpp = 3 if ctype == 2 else 4
    rows = unfilter(zlib.decompress(idat), width, height, bpp)
    colours = set()
    for row in rows[::8]:  # every 8th row is plenty to tell blank pages
        for x in range(0, len(row), bpp):
            colours.add(row[x:x + bpp])
    print(width, height, len(colours))


main()
