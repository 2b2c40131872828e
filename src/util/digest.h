// sha256 of bytes, as lowercase hex: the manifest's digests (manifest/manifest.h).
#pragma once

#include <string>
#include <string_view>

namespace brig::util {

std::string Sha256Hex(std::string_view data);

}  // namespace brig::util
