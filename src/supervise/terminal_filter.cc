// The terminal filter (terminal_filter.h): a parser of ECMA-48 output, after the DEC/xterm
// state machine, that holds each escape sequence until its final byte and then writes it
// whole or not at all. What passes is a list of what ordinary output uses; anything not on
// it is dropped, so a query a terminal adds tomorrow is dropped too.
#include "supervise/terminal_filter.h"

#include <cctype>

namespace brig::supervise {
namespace {

constexpr uint8_t kEnq = 0x05, kBel = 0x07, kCan = 0x18, kSub = 0x1a, kEsc = 0x1b, kDel = 0x7f,
                  kSt = 0x9c;

// ESC and one final byte: cursor save and restore, keypad modes, index, next line, tab set,
// reverse index, single and locking shifts, back and forward index, full reset. Not ESC Z
// (DECID: the terminal answers with its attributes).
constexpr std::string_view kEscFinals = "6789=>DEHMNOcno|}~";

// CSI with neither private marker nor intermediate: cursor movement and position, erasing,
// insertion and deletion, scrolling, tabs, repeat, SGR (colours and attributes), the scroll
// region, cursor save and restore. Not c (device attributes), n (status and cursor position
// reports), t (window reports, the title stack), x (DECREQTPARM), i (media copy).
constexpr std::string_view kCsiFinals = "@ABCDEFGHIJKLMPSTXZ`abdefgmrsu";

bool In(std::string_view set, char c) { return set.find(c) != std::string_view::npos; }

// `ch`: a whole UTF-8 character. Whether a continuation byte is 0x80 to 0x9F.
bool HasC1Byte(std::string_view ch) {
  for (char b : ch.substr(1)) {
    if (static_cast<uint8_t>(b) < 0xA0) return true;
  }
  return false;
}

// `seq`: ESC, intermediates (0x20-0x2F), a final byte.
bool EscAllowed(std::string_view seq) {
  char final = seq.back();
  std::string_view inter = seq.substr(1, seq.size() - 2);
  if (inter.empty()) return In(kEscFinals, final);
  // Character set designations (ESC ( 0 is line drawing); a set's name may take two bytes.
  if (In("()*+-./", inter[0])) return inter.size() <= 2;
  if (inter.size() != 1) return false;
  switch (inter[0]) {
    case '#':  // line size, DECALN
      return In("34568", final);
    case ' ':  // 7- or 8-bit controls in the terminal's own output, conformance levels
      return In("FGLMN", final);
    case '%':  // UTF-8 on; never off, which would make UTF-8 text bytes C1 controls
      return final == 'G';
    default:
      return false;
  }
}

// `seq`: ESC [, parameter bytes (0x30-0x3F), intermediates (0x20-0x2F), a final byte.
bool CsiAllowed(std::string_view seq) {
  char final = seq.back();
  std::string_view body = seq.substr(2, seq.size() - 3);
  char marker = 0;
  if (!body.empty() && In("<=>?", body[0])) {
    marker = body[0];
    body.remove_prefix(1);
  }
  size_t end = body.find_first_not_of("0123456789;:");
  std::string_view params = body.substr(0, end);
  std::string_view inter = end == std::string_view::npos ? "" : body.substr(end);
  // A parameter byte after an intermediate, or a marker among the parameters: terminals
  // ignore such a sequence, and brig does not guess how each does.
  if (inter.find_first_not_of(" !\"#$%&'()*+,-./") != std::string_view::npos) return false;
  if (!inter.empty()) {
    // DECSCUSR (the cursor's shape) and DECSTR (soft reset); $ p (DECRQM) and the other
    // reports and rectangle requests are not here.
    return marker == 0 && ((inter == " " && final == 'q') || (inter == "!" && final == 'p'));
  }
  switch (marker) {
    case 0:
      // SM and RM only for insert mode: others lock the keyboard (KAM) or change what
      // Enter sends (LNM), and stay so after brig ends.
      if (final == 'h' || final == 'l') return params == "4";
      return In(kCsiFinals, final);
    case '?':
      // DEC private modes (the alternate screen, the cursor, bracketed paste, mouse
      // reporting), their save and restore, selective erase.
      return In("hlrsJK", final);
    case '>':
      // xterm's modifyOtherKeys, which vim sets; > c, > q and > t are queries.
      return final == 'm';
    default:
      return false;
  }
}

}  // namespace

TerminalCodeset CodesetOfLocale(std::string_view lc_all, std::string_view lc_ctype,
                                std::string_view lang) {
  std::string_view name = !lc_all.empty() ? lc_all : !lc_ctype.empty() ? lc_ctype : lang;
  if (name.empty() || name == "C" || name == "POSIX") return TerminalCodeset::kUnknown;
  size_t dot = name.find('.');
  if (dot == std::string_view::npos) return TerminalCodeset::kEightBit;
  std::string codeset;
  for (char c : name.substr(dot + 1, name.find('@', dot) - dot - 1)) {
    codeset += static_cast<char>(tolower(static_cast<unsigned char>(c)));
  }
  return codeset == "utf-8" || codeset == "utf8" ? TerminalCodeset::kUtf8
                                                 : TerminalCodeset::kEightBit;
}

void TerminalFilter::Feed(std::string_view in, std::string& out) {
  for (char ch : in) {
    auto c = static_cast<uint8_t>(ch);
    switch (state_) {
      case State::kGround:
        Ground(c, out);
        break;
      case State::kEscape:
        Escape(c, out);
        break;
      case State::kCsi:
        Csi(c, out);
        break;
      case State::kString:
        String(c, out);
        break;
    }
  }
}

void TerminalFilter::Ground(uint8_t c, std::string& out) {
  if (need_ > 0) {
    if (c >= lo_ && c <= hi_) {
      held_ += static_cast<char>(c);
      lo_ = 0x80;
      hi_ = 0xBF;
      if (--need_ > 0) return;
      // U+0080 to U+009F are the C1 controls, which a terminal may take in UTF-8 too.
      if (held_.size() == 2 && static_cast<uint8_t>(held_[0]) == 0xC2 && c < 0xA0) {
        held_.clear();
        C1(c);
        return;
      }
      // A continuation byte 0x80 to 0x9F is a C1 control to an 8-bit terminal (U+01DB is
      // C7 9B: 'Ç' and CSI), so where the terminal may be one the character is a '?'.
      if (codeset_ == TerminalCodeset::kUnknown && HasC1Byte(held_)) {
        out += '?';
      } else {
        out += held_;
      }
      held_.clear();
      return;
    }
    // Not a character: one '?' stands for its bytes, which may be C1 controls to a
    // terminal that decodes differently, and `c` is read afresh.
    held_.clear();
    need_ = 0;
    out += '?';
  }
  if (c == kEsc) return StartEscape();
  if (c < 0x80) {
    // Text and the C0 controls, but ENQ: a terminal answers it with its answerback message.
    if (c != kEnq) out += static_cast<char>(c);
    return;
  }
  if (c < 0xA0) return C1(c);
  if (codeset_ == TerminalCodeset::kEightBit) {
    out += static_cast<char>(c);
    return;
  }
  lo_ = 0x80;
  hi_ = 0xBF;
  if (c >= 0xC2 && c <= 0xDF) {
    need_ = 1;
  } else if (c >= 0xE0 && c <= 0xEF) {
    need_ = 2;
    if (c == 0xE0) lo_ = 0xA0;
    if (c == 0xED) hi_ = 0x9F;
  } else if (c >= 0xF0 && c <= 0xF4) {
    need_ = 3;
    if (c == 0xF0) lo_ = 0x90;
    if (c == 0xF4) hi_ = 0x8F;
  } else {
    out += '?';
    return;
  }
  held_.assign(1, static_cast<char>(c));
}

// A C1 control, as a byte or (but in 8-bit) in UTF-8. Ordinary output uses the 7-bit forms,
// so each is dropped, with the sequence or string it introduces (read to its end, so that
// none of it shows as text).
void TerminalFilter::C1(uint8_t c) {
  switch (c) {
    case 0x9B:  // CSI
      return StartDropped(State::kCsi, false);
    case 0x9D:  // OSC
      return StartDropped(State::kString, true);
    case 0x90:  // DCS
    case 0x98:  // SOS
    case 0x9E:  // PM
    case 0x9F:  // APC
      return StartDropped(State::kString, false);
    default:
      return;
  }
}

// In a sequence: ESC starts another (this one is dropped), CAN and SUB cancel it, DEL is
// ignored, and a byte past ASCII cannot be part of one (the sequence is dropped and the byte
// read as text), as terminals do. Another C0 control acts where it stands, so it is written
// at once, before the sequence it interrupts, which keeps the sequence in one piece.
bool TerminalFilter::Interrupts(uint8_t c, std::string& out) {
  if (c >= 0x20 && c < kDel) return false;
  if (c == kEsc) {
    StartEscape();
  } else if (c == kCan || c == kSub) {
    Reset();
  } else if (c >= 0x80) {
    Reset();
    Ground(c, out);
  } else if (c != kDel && c != kEnq) {
    out += static_cast<char>(c);
  }
  return true;
}

void TerminalFilter::Escape(uint8_t c, std::string& out) {
  if (Interrupts(c, out)) return;
  if (c < 0x30) return Hold(c);
  if (held_.size() == 1) {
    switch (c) {
      case '[':
        held_ += static_cast<char>(c);
        state_ = State::kCsi;
        return;
      // Strings: OSC (the title, the clipboard, colours and their queries, hyperlinks,
      // notifications), DCS (DECRQSS, XTGETTCAP, tmux's passthrough), SOS, PM, APC
      // (kitty's graphics, which answer) and screen's and tmux's window title (ESC k).
      case ']':
        return StartDropped(State::kString, true);
      case 'k':
      case 'P':
      case 'X':
      case '^':
      case '_':
        return StartDropped(State::kString, false);
      default:
        break;
    }
  }
  held_ += static_cast<char>(c);
  if (keep_ && EscAllowed(held_)) out += held_;
  Reset();
}

void TerminalFilter::Csi(uint8_t c, std::string& out) {
  if (Interrupts(c, out)) return;
  if (c < 0x40) return Hold(c);
  if (keep_) {
    held_ += static_cast<char>(c);
    if (CsiAllowed(held_)) out += held_;
  }
  Reset();
}

// Every string is dropped, to its end: ST (ESC \, or the byte 0x9C in 8-bit), BEL for an
// OSC, CAN or SUB, or another escape, which ends it as terminals do.
void TerminalFilter::String(uint8_t c, std::string& out) {
  if (string_esc_) {
    string_esc_ = false;
    if (c == '\\') return Reset();
    StartEscape();
    return Escape(c, out);
  }
  if (c == kEsc) {
    string_esc_ = true;
  } else if (c == kCan || c == kSub || (c == kBel && osc_) ||
             (c == kSt && codeset_ == TerminalCodeset::kEightBit)) {
    Reset();
  }
}

void TerminalFilter::Hold(uint8_t c) {
  if (!keep_) return;
  if (held_.size() >= kMaxSequence) {
    keep_ = false;
    held_.clear();
    return;
  }
  held_ += static_cast<char>(c);
}

void TerminalFilter::StartEscape() {
  Reset();
  state_ = State::kEscape;
  held_.assign(1, static_cast<char>(kEsc));
}

void TerminalFilter::StartDropped(State s, bool osc) {
  Reset();
  state_ = s;
  keep_ = false;
  osc_ = osc;
}

void TerminalFilter::Reset() {
  state_ = State::kGround;
  held_.clear();
  keep_ = true;
  osc_ = false;
  string_esc_ = false;
  need_ = 0;
}

}  // namespace brig::supervise
