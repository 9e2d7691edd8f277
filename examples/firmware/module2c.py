#!/usr/bin/python3
"""Write a .ingot module as a C header for the module firmware (MODE=module).

    module2c.py NAME MODEL.ingot -o NAME_module.h

Defines module_NAME, the module's bytes (64-byte aligned, in flash), and
MODULE_NAME_ARENA_SIZE, the arena its plan needs (read from the PLAN section).
"""
import argparse
import os
import struct
import sys

PLAN = 2


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("name")
    ap.add_argument("module")
    ap.add_argument("-o", "--output", required=True)
    args = ap.parse_args()
    data = open(args.module, "rb").read()
    if data[:8] != b"INGOTMOD":
        sys.exit(f"module2c: {args.module} is not an ingot module")
    (count,) = struct.unpack_from("<I", data, 28)
    arena = None
    for i in range(count):
        kind, _crc, offset, _size = struct.unpack_from("<IIQQ", data, 72 + 24 * i)
        if kind == PLAN:
            (arena,) = struct.unpack_from("<Q", data, offset)
    if arena is None:
        sys.exit(f"module2c: {args.module} has no PLAN section")
    arena = (arena + 63) // 64 * 64
    p, P = args.name, args.name.upper()
    rows = ",\n    ".join(", ".join(f"0x{b:02x}" for b in data[i:i + 16]) for i in range(0, len(data), 16))
    text = (f"/* The module {os.path.basename(args.module)} as C, written by module2c.py. */\n"
            f"#define MODULE_{P}_ARENA_SIZE {arena}u\n"
            f"static const unsigned char module_{p}[{len(data)}] __attribute__((aligned(64))) = {{\n    {rows}}};\n")
    with open(args.output + ".tmp", "w") as f:
        f.write(text)
    os.replace(args.output + ".tmp", args.output)


if __name__ == "__main__":
    main()
