"""Writes an image folder (DIR/<class>/<image>) as sharded record files, with nothing of fitscope: the
TFRecord framing, CRC-32C and tf.train.Example encoding are written out here from their public
definitions, and the tar shards come from Python's tarfile. Labels are the class folders' indices in
sorted order, as an image folder's.

    write_shards.py tfrecord|tar FOLDER OUT_DIR SHARDS
"""
import os
import struct
import sys
import tarfile
import io


def crc_table():
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ (0x82F63B78 if n & 1 else 0)  # CRC-32C's reflected polynomial
        table.append(n)
    return table


TABLE = crc_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc = TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc ^ 0xFFFFFFFF


def masked(crc):
    return (((crc >> 15) | (crc << 17)) + 0xA282EAD8) & 0xFFFFFFFF


def varint(n):
    out = bytearray()
    while True:
        low = n & 0x7F
        n >>= 7
        out.append(low | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number, payload):  # a length-delimited field
    return varint(number << 3 | 2) + varint(len(payload)) + payload


def example(image, label):
    # Example{features: Features{feature: map<string, Feature>}}; Feature{bytes_list=1, int64_list=3}
    bytes_feature = field(1, field(1, image))                  # BytesList{value=1}
    int64_feature = field(3, field(1, varint(label)))          # Int64List{value=1, packed}
    entries = field(1, field(1, b"image/encoded") + field(2, bytes_feature))
    entries += field(1, field(1, b"image/class/label") + field(2, int64_feature))
    return field(1, entries)


def tfrecord(data):
    length = struct.pack("<Q", len(data))
    return length + struct.pack("<I", masked(crc32c(length))) + data + struct.pack("<I", masked(crc32c(data)))


def main():
    kind, folder, out, shards = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    classes = sorted(c for c in os.listdir(folder) if os.path.isdir(os.path.join(folder, c)))
    images = [(os.path.join(folder, c, f), label) for label, c in enumerate(classes)
              for f in sorted(os.listdir(os.path.join(folder, c)))]
    os.makedirs(out, exist_ok=True)
    for s in range(shards):
        mine = images[s::shards]
        if kind == "tfrecord":
            with open(os.path.join(out, "part-%d.tfrecord" % s), "wb") as f:
                for path, label in mine:
                    with open(path, "rb") as image:
                        f.write(tfrecord(example(image.read(), label)))
        else:
            with tarfile.open(os.path.join(out, "part-%d.tar" % s), "w", format=tarfile.USTAR_FORMAT) as tar:
                for i, (path, label) in enumerate(mine):
                    key = "s%d_%06d" % (s, i)
                    tar.add(path, arcname=key + os.path.splitext(path)[1].lower())
                    cls = str(label).encode()
                    info = tarfile.TarInfo(key + ".cls")
                    info.size = len(cls)
                    tar.addfile(info, io.BytesIO(cls))


main()
