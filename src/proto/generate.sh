#!/bin/sh
# protoc's C++ for brig's protos, less one line a file: the static AddDescriptorsRunner that
# parses and indexes the file's encoded descriptor (FileDescriptorProto) when brig starts,
# 13 KB for these two files, in every brig process (0.15 ms of `brig --version`'s 1.8 ms).
# Nothing is lost: the first use of a message's descriptor or reflection (text format,
# JSON, DebugString) adds the file to the generated pool first (AssignDescriptors calls
# AddDescriptors), and brig never looks its types up by name before using them. A protoc
# that writes no such line leaves the files as they are.
# Usage: generate.sh PROTOC PROTO_DIR OUT_DIR FILE.proto...
set -eu
protoc=$1 proto_dir=$2 out=$3
shift 3
"$protoc" --proto_path="$proto_dir" --cpp_out="$out" "$@"
for proto in "$@"; do
  sed -i '/AddDescriptorsRunner dynamic_init_dummy_/d' "$out/$(basename "$proto" .proto).pb.cc"
done
