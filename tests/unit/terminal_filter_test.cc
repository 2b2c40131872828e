// The terminal filter (supervise/terminal_filter.h): ordinary output passes byte for byte,
// every sequence a terminal answers or that sets its title or clipboard is dropped, in
// whichever pieces it comes, and an endless sequence holds no more than its bound; for a
// terminal that is not in UTF-8, no byte 0x80 to 0x9F passes, text's bytes included.
#include "supervise/terminal_filter.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace brig::supervise {
namespace {

constexpr TerminalCodeset kUtf8 = TerminalCodeset::kUtf8;
constexpr TerminalCodeset kEightBit = TerminalCodeset::kEightBit;
constexpr TerminalCodeset kUnknown = TerminalCodeset::kUnknown;

std::string Filter(const std::string& in, TerminalCodeset codeset = kUtf8) {
  TerminalFilter f(codeset);
  std::string out;
  f.Feed(in, out);
  return out;
}

// What colour, cursor and screen handling ordinary tools write (ncurses' xterm-256color
// entry, vim, less, npm, git, cargo, Python's rich), and UTF-8 text whose bytes include
// 0x90, 0x9B, 0x9D and 0x9F, which are C1 controls on their own.
const std::string kOrdinary =
    "plain \x1b[1mbold\x1b[0m \x1b[31mred\x1b[m \x1b[38;5;208m256\x1b[39m "
    "\x1b[38;2;255;128;0;48;2;0;0;64mtrue\x1b[0m \x1b[4:3m\x1b[58:2::255:0:0mcurly\x1b[24m\r\n"
    "\x1b[?1049h\x1b[22;0;0H\x1b[?25l\x1b[?1h\x1b=\x1b[H\x1b[2J\x1b[3;20r\x1b[?7h"
    "\x1b[1A\x1b[2K\x1b[1G\x1b[0K\x1b[10;5H\x1b[5C\x1b[2D\x1b[3X\x1b[2P\x1b[4@\x1b[2L\x1b[M"
    "\x1b[S\x1b[2T\x1b[Z\x1b[3g\x1bH\0337\0338\033M\033D\033E\x1b[s\x1b[u\x1b[5b\x1b[12d"
    "\x1b(0lqk\x1b(B\x1b)0\x0e\x0f\x1b[4h\x1b[4l\x1b[2 q\x1b[?2004h\x1b[?1000;1006h"
    "\x1b[>4;2m\x1b[?2026h\x1b[?2026l\x1b[?12;25h\x1b[!p\033c\x1b#8\x1b%G\x1b>\x1b[?1049l"
    "\t|\x08\x07 caf\xc3\xa9 \xe2\x80\x94 \xe2\x9c\x93 \xe2\x95\x90 \xe2\x9d\xaf "
    "\xf0\x9f\x99\x82 \xc4\x9b\r\n"
    "npm \x1b[?25l\r[####......] \x1b[K\r\x1b[?25h done\n";

// Every sequence here makes a terminal answer on its input, sets its title, colours or
// clipboard, or reaches another terminal through a multiplexer.
const std::vector<std::string> kForbidden = {
    "\x1b[6n",                           // cursor position report
    "\x1b[5n",                           // status report
    "\x1b[?6n",                          // DEC cursor position report
    "\x1b[?996n",                        // colour theme report
    "\x1b[c",                            // primary device attributes
    "\x1b[0c",                           //
    "\x1b[>c",                           // secondary device attributes
    "\x1b[=c",                           // tertiary device attributes
    "\x1bZ",                             // DECID
    "\x05",                              // ENQ: the answerback message
    "\x1b[21t",                          // report window title
    "\x1b[14t",                          // window size in pixels
    "\x1b[18t",                          // text area size
    "\x1b[22;0t",                        // title stack
    "\x1b[?2004$p",                      // DECRQM, private mode
    "\x1b[4$p",                          // DECRQM, ANSI mode
    "\x1b[>q",                           // XTVERSION
    "\x1b[?u",                           // kitty keyboard flags query
    "\x1b[>1u",                          // kitty keyboard flags push
    "\x1b[?4m",                          // XTQMODKEYS
    "\x1b[?1;1S",                        // XTSMGRAPHICS
    "\x1b[1x",                           // DECREQTPARM
    "\x1b[1;1;1;1;1;1*y",                // DECRQCRA: a checksum of the screen
    "\x1b[1'|",                          // DECRQLP
    "\x1b[#R",                           // XTREPORTCOLORS
    "\x1b[5i",                           // printer controller mode
    "\x1b[2h",                           // KAM: locks the keyboard
    "\x1b[20h",                          // LNM: changes what Enter sends
    "\x1b%@",                            // UTF-8 off
    "\x1bkname\x1b\\",                   // screen's and tmux's window title
    "\x1b]0;evil title\x07",             // set the title
    "\x1b]2;evil title\x1b\\",           //
    "\x1b]52;c;?\x07",                   // read the clipboard
    "\x1b]52;c;ZWNobyBwd25lZA==\x07",    // write the clipboard
    "\x1b]10;?\x07",                     // foreground colour query
    "\x1b]11;?\x1b\\",                   // background colour query
    "\x1b]12;?\x07",                     // cursor colour query
    "\x1b]4;1;?\x07",                    // palette query
    "\x1b]4;1;rgb:ff/00/00\x07",         // palette change
    "\x1b]8;;file:///etc/passwd\x1b\\",  // a hyperlink
    "\x1b]777;notify;x;y\x07",           // a notification
    "\x1bP$qm\x1b\\",                    // DECRQSS
    "\x1bP+q544e\x1b\\",                 // XTGETTCAP
    "\x1bPtmux;\x1b\x1b[6n\x1b\\",       // tmux passthrough
    "\x1b_Gi=1,a=q;\x1b\\",              // kitty graphics query
    "\x1bXsos\x1b\\",                    // SOS
    "\x1b^pm\x1b\\",                     // PM
    "\2336n",                            // C1 CSI
    "\302\2336n",                        // C1 CSI in UTF-8
    "\23552;c;?\x07",                    // C1 OSC
    "\302\2350;t\x07",                   // C1 OSC in UTF-8
    "\x90$qm\x1b\\",                     // C1 DCS
    "\x9a",                              // C1 DECID
};

TEST(TerminalFilter, OrdinaryOutputPassesByteForByte) { EXPECT_EQ(Filter(kOrdinary), kOrdinary); }

TEST(TerminalFilter, EverySequenceThatMakesATerminalAnswerIsDropped) {
  for (const std::string& q : kForbidden) {
    EXPECT_EQ(Filter("a" + q + "b"), "ab") << testing::PrintToString(q);
  }
}

// A read may end anywhere: in a sequence, between ESC and its next byte, in a character.
// `all` fed in two reads cut at each place, and a byte at a time, gives the one-shot output.
void ExpectSplitChangesNothing(const std::string& all, TerminalCodeset codeset) {
  std::string want = Filter(all, codeset);
  for (size_t cut = 0; cut <= all.size(); ++cut) {
    TerminalFilter f(codeset);
    std::string out;
    f.Feed(all.substr(0, cut), out);
    f.Feed(all.substr(cut), out);
    ASSERT_EQ(out, want) << "cut at " << cut;
  }
  TerminalFilter f(codeset);
  std::string out;
  for (char c : all) f.Feed(std::string(1, c), out);
  EXPECT_EQ(out, want);
}

TEST(TerminalFilter, HowTheOutputIsSplitChangesNothing) {
  std::string all = kOrdinary;
  for (const std::string& q : kForbidden) all += q + "x";
  EXPECT_EQ(Filter(all), kOrdinary + std::string(kForbidden.size(), 'x'));
  ExpectSplitChangesNothing(all, kUtf8);
}

TEST(TerminalFilter, WhatIsCutIsHeldUntilItEnds) {
  TerminalFilter f(kUtf8);
  std::string out;
  f.Feed("ab\x1b[3", out);
  EXPECT_EQ(out, "ab");
  EXPECT_EQ(f.held(), 3u);
  f.Feed("1mc\xe2\x9c", out);
  EXPECT_EQ(out, "ab\x1b[31mc");
  EXPECT_EQ(f.held(), 2u);
  f.Feed("\x93", out);
  EXPECT_EQ(out, "ab\x1b[31mc\xe2\x9c\x93");
  EXPECT_EQ(f.held(), 0u);
}

TEST(TerminalFilter, AnEndlessSequenceHoldsNoMoreThanItsBound) {
  TerminalFilter f(kUtf8);
  std::string out;
  f.Feed("\x1b]52;c;", out);
  for (int i = 0; i < 1024; ++i) {
    f.Feed(std::string(1024, 'A'), out);
    ASSERT_EQ(f.held(), 0u);
  }
  f.Feed("\x1b[", out);
  for (int i = 0; i < 1024; ++i) {
    f.Feed(std::string(1024, '1'), out);
    ASSERT_LE(f.held(), TerminalFilter::kMaxSequence);
  }
  f.Feed("m\x1bP", out);
  for (int i = 0; i < 1024; ++i) f.Feed(std::string(1024, 'q'), out);
  EXPECT_EQ(f.held(), 0u);
  f.Feed("\x1b\\after", out);
  EXPECT_EQ(out, "after");
}

// Terminals end a string at any escape and execute a C0 control inside a sequence; the
// filter's output keeps each sequence whole, so every terminal reads it alike.
TEST(TerminalFilter, SequencesComeOutWhole) {
  EXPECT_EQ(Filter("\x1b]0;title\x1b[31mred"), "\x1b[31mred");
  EXPECT_EQ(Filter("\x1b[3\n1m"), "\n\x1b[31m");
  EXPECT_EQ(Filter("\x1b[6\nn"), "\n");
  EXPECT_EQ(Filter("\x1b[3\0301m"), "1m") << "CAN cancels the sequence";
  EXPECT_EQ(Filter("\x1b[3\x1b[31m"), "\x1b[31m");
  EXPECT_EQ(Filter("\x1b[3\xc3\xa9"), "\xc3\xa9") << "a character ends a sequence";
  EXPECT_EQ(Filter("\x1b[1;2$4p"), "") << "a parameter after an intermediate";
  EXPECT_EQ(Filter("\x1b[1?h"), "") << "a marker among the parameters";
}

// A byte that is no part of a character might be a C1 control to a terminal that decodes
// otherwise: what the filter writes is always UTF-8.
TEST(TerminalFilter, BytesThatAreNoCharacterBecomeAQuestionMark) {
  EXPECT_EQ(Filter("a\342\2336nb"), "a?6nb");
  EXPECT_EQ(Filter("\xa9x\xffy\xc0z"), "?x?y?z");
  EXPECT_EQ(Filter("\xed\xa0\xa0"), "???") << "a surrogate";
  EXPECT_EQ(Filter("\xf4\xa0\xa0\xa0"), "????") << "past U+10FFFF";
  EXPECT_EQ(Filter("a\2336nb"), "ab") << "a C1 CSI is read to its end and dropped";
  EXPECT_EQ(Filter("\x85x"), "x") << "other C1 controls are dropped";
}

// Every C1 control as a single byte, with what it introduces, each string ended in each of
// the ways an 8-bit terminal ends one (ST as ESC \ or as the byte 0x9C, BEL for an OSC).
const std::vector<std::string> kEightBitForbidden = {
    "\2336n",                    // CSI: cursor position report
    "\233c",                     // CSI: device attributes
    "\23321t",                   // CSI: report the title
    "\233?2004$p",               // CSI: DECRQM
    "\23331m",                   // CSI: even SGR, as a C1 control is dropped whole
    "\x1b[31\2336n",             // a sequence cut by a C1 CSI
    "\220$qm\x1b\\",             // DCS: DECRQSS
    "\220+q544e\x9c",            // DCS: XTGETTCAP
    "\220tmux;\x1b\x1b[6n\x9c",  // DCS: tmux passthrough
    "\23552;c;?\x07",            // OSC: read the clipboard
    "\2350;title\x9c",           // OSC: set the title
    "\23511;?\x1b\\",            // OSC: background colour query
    "\230sos\x9c",               // SOS
    "\236pm\x1b\\",              // PM
    "\237Gi=1,a=q;\x9c",         // APC: kitty graphics query
    "\x9a",                      // DECID
    "\x85",                      // NEL
    "\x8e",                      // SS2
    "\x9c",                      // ST alone
};

// Latin-1's letters and signs, 0xA0 to 0xFF, each one character to an 8-bit terminal.
std::string Latin1Text() {
  std::string s;
  for (int c = 0xA0; c <= 0xFF; ++c) s += static_cast<char>(c);
  return s;
}

bool HasC1Byte(const std::string& s) {
  for (char c : s) {
    if (static_cast<uint8_t>(c) >= 0x80 && static_cast<uint8_t>(c) < 0xA0) return true;
  }
  return false;
}

TEST(TerminalFilter, EightBitEveryC1ControlAsAByteIsDroppedWithWhatItIntroduces) {
  for (const std::string& q : kEightBitForbidden) {
    EXPECT_EQ(Filter("a" + q + "b", kEightBit), "ab") << testing::PrintToString(q);
  }
  // The 7-bit forms are dropped as in UTF-8; a C1 control in UTF-8 is 0xC2 ('\302', A
  // with a circumflex) and a C1 control.
  for (const std::string& q : kForbidden) {
    std::string want = q[0] == '\302' ? "a\302b" : "ab";
    EXPECT_EQ(Filter("a" + q + "b", kEightBit), want) << testing::PrintToString(q);
  }
}

TEST(TerminalFilter, EightBitLatin1TextAndOrdinarySequencesPassByteForByte) {
  std::string text = "gr\xfc\xdf \x1b[1m" + Latin1Text() + "\x1b[0m\r\n\x1b[?1049h\x1b[10;5H" +
                     "\x1b(0lqk\x1b(B\x1b[38;5;208m\xe9t\xe9\x1b[m\x1b[?1049l";
  EXPECT_EQ(Filter(text, kEightBit), text);
  EXPECT_EQ(Filter("\x1b[3\xe9", kEightBit), "\xe9") << "a byte past ASCII ends a sequence";
}

// U+01DB is C7 9B in UTF-8; to an 8-bit terminal, 'Ç' and CSI, the start of a query.
TEST(TerminalFilter, AUtf8CharacterWithAC1ByteIsNoQueryToAnEightBitTerminal) {
  const std::string attack = "\xc7\2336n";
  EXPECT_EQ(Filter(attack, kUtf8), attack) << "a UTF-8 terminal reads U+01DB, '6', 'n'";
  EXPECT_EQ(Filter(attack, kEightBit), "\xc7");
  EXPECT_EQ(Filter(attack, kUnknown), "?6n");
}

// An 8-bit terminal or a UTF-8 one: UTF-8 passes but for a character with a byte 0x80 to
// 0x9F, which is one '?'; the C1 controls, as bytes or in UTF-8, are dropped as in UTF-8.
TEST(TerminalFilter, UnknownCodesetNoByteOfAC1ControlPassesInACharacter) {
  EXPECT_EQ(Filter("caf\xc3\xa9 \xc3\x89t\xc3\xa9 \xe4\xbd\xa0 \xe2\x9c\x93 \xe2\x80\x94 "
                   "\xf0\x9f\x99\x82.",
                   kUnknown),
            "caf\xc3\xa9 ?t\xc3\xa9 \xe4\xbd\xa0 ? ? ?.");
  EXPECT_EQ(Filter("\xa9x\xe2\x9c", kUnknown), "?x") << "no character, and one cut at the end";
  for (const std::string& q : kForbidden) {
    EXPECT_EQ(Filter("a" + q + "b", kUnknown), "ab") << testing::PrintToString(q);
  }
  for (const std::string& q : kEightBitForbidden) {
    EXPECT_EQ(Filter("a" + q + "b", kUnknown).find_first_of("\x1b\x9b\x9c"), std::string::npos)
        << testing::PrintToString(q);
  }
}

TEST(TerminalFilter, EightBitAndUnknownHowTheOutputIsSplitChangesNothing) {
  std::string all = kOrdinary + Latin1Text();
  for (const std::string& q : kForbidden) all += q + "x";
  for (const std::string& q : kEightBitForbidden) all += q + "y";
  all += "\xc7\2336n\xe2\x9c";
  for (TerminalCodeset codeset : {kEightBit, kUnknown}) {
    SCOPED_TRACE(static_cast<int>(codeset));
    EXPECT_FALSE(HasC1Byte(Filter(all, codeset)));
    ExpectSplitChangesNothing(all, codeset);
  }
  TerminalFilter f(kEightBit);
  std::string out;
  f.Feed("\2350;ti", out);
  EXPECT_EQ(f.held(), 0u) << "a dropped string holds nothing";
  f.Feed("tle\x9c\xe9", out);
  EXPECT_EQ(out, "\xe9");
  EXPECT_EQ(f.held(), 0u);
}

// POSIX's order: LC_ALL, then LC_CTYPE, then LANG, the first set and not empty ("" here).
TEST(TerminalFilter, TheCallersLocaleNamesTheCodeset) {
  EXPECT_EQ(CodesetOfLocale("", "", "en_US.UTF-8"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "C.utf8"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "C.UTF-8"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "de_DE.UTF8"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "sr_RS.utf-8@latin"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "de_DE.ISO-8859-1"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("", "", "de_DE.iso88591@euro"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("", "", "ru_RU.KOI8-R"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("", "", "en_US"), kEightBit) << "glibc's en_US is ISO-8859-1";
  EXPECT_EQ(CodesetOfLocale("", "", "en_US.UTF-16"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("", "", "C"), kUnknown);
  EXPECT_EQ(CodesetOfLocale("", "", "POSIX"), kUnknown);
  EXPECT_EQ(CodesetOfLocale("", "", ""), kUnknown);

  EXPECT_EQ(CodesetOfLocale("C", "en_US.UTF-8", "en_US.UTF-8"), kUnknown);
  EXPECT_EQ(CodesetOfLocale("de_DE.ISO-8859-1", "en_US.UTF-8", "en_US.UTF-8"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("en_US.UTF-8", "de_DE.ISO-8859-1", "C"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "de_DE.ISO-8859-1", "en_US.UTF-8"), kEightBit);
  EXPECT_EQ(CodesetOfLocale("", "en_US.UTF-8", "de_DE.ISO-8859-1"), kUtf8);
  EXPECT_EQ(CodesetOfLocale("", "", "de_DE.ISO-8859-1"), kEightBit);
}

}  // namespace
}  // namespace brig::supervise
