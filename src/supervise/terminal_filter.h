// What of the workload's output may reach the caller's terminal (issue 27, item 6): text and
// the control sequences of ordinary output pass; what makes a terminal answer on its input,
// set its title or clipboard, or pass bytes on to another terminal is dropped (brig-run(1)
// has the list and the threat). Pure and streaming; unit-tested and fuzzed. Which bytes are
// C1 controls depends on how the terminal decodes, which the caller's locale says.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace brig::supervise {

// How the caller's terminal reads bytes past ASCII, and so which of them are C1 controls.
enum class TerminalCodeset : uint8_t {
  // As UTF-8: U+0080 to U+009F are the C1 controls.
  kUtf8,
  // One byte, one character (ISO 8859, KOI8...): the bytes 0x80 to 0x9F are C1 controls,
  // continuation bytes of UTF-8 among them.
  kEightBit,
  // Either (the C and POSIX locales promise ASCII only): the output is read as UTF-8 and
  // must be harmless read either way, so no byte 0x80 to 0x9F passes, in a character or not.
  kUnknown,
};

// The codeset the caller's locale names: the first of LC_ALL, LC_CTYPE and LANG that is
// set and not empty, as POSIX orders them ("" for unset). UTF-8 if its codeset (after the
// '.', before any '@') is UTF-8 or utf8 in any case; unknown for C, POSIX or none set;
// otherwise 8-bit, whatever the codeset (a locale without one is 8-bit in glibc too).
TerminalCodeset CodesetOfLocale(std::string_view lc_all, std::string_view lc_ctype,
                                std::string_view lang);

class TerminalFilter {
 public:
  explicit TerminalFilter(TerminalCodeset codeset) : codeset_(codeset) {}

  // At most this many bytes of one escape sequence are held; a longer one is dropped.
  static constexpr size_t kMaxSequence = 256;

  // Appends to `out` what of `in` may reach the terminal, `in` following what was fed
  // before: a sequence or character cut by the end of `in` is held, and written (or
  // dropped) when the rest comes, so how the stream is split never changes the output.
  // Never writes more bytes than it was fed.
  void Feed(std::string_view in, std::string& out);
  // Bytes held for what comes next; none once a sequence or character is complete. At the
  // end of the stream they are dropped: an unfinished sequence must never reach a terminal,
  // where it would join with the next writer's bytes.
  size_t held() const { return held_.size(); }

 private:
  enum class State : uint8_t { kGround, kEscape, kCsi, kString };

  void Ground(uint8_t c, std::string& out);
  void C1(uint8_t c);
  void Escape(uint8_t c, std::string& out);
  void Csi(uint8_t c, std::string& out);
  void String(uint8_t c, std::string& out);
  bool Interrupts(uint8_t c, std::string& out);
  void Hold(uint8_t c);
  void StartEscape();
  void StartDropped(State s, bool osc);
  void Reset();

  TerminalCodeset codeset_;
  State state_ = State::kGround;
  // An escape sequence read so far (from its ESC), or a UTF-8 character's first bytes
  // (never in 8-bit, where every byte is a character).
  std::string held_;
  // The sequence being read may still pass: it began with ESC (not a C1 control) and was
  // not too long.
  bool keep_ = true;
  bool osc_ = false;         // the string is an OSC, which BEL also ends
  bool string_esc_ = false;  // an ESC inside a string: ST if '\' follows
  // A UTF-8 character in ground: continuation bytes still to come, and the range the next
  // one must be in (RFC 3629: no overlong forms, no surrogates, nothing past U+10FFFF).
  uint8_t need_ = 0, lo_ = 0x80, hi_ = 0xBF;
};

}  // namespace brig::supervise
