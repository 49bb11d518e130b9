// The test corpus: deterministic (seeded) strings that exercise every part of
// a byte-level BPE tokenizer. Code points where the JavaScript reference and
// Hugging Face's Rust tokenizers are known to differ are left out here and
// tested by hand in Go (see divergences in the README of this folder):
// U+0085 and U+FEFF (\s differs), U+017F (case folding of (?i:'s)).

export function rng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

const EXCLUDED = new Set([0x85, 0xfeff, 0x17f]);

// Ranges assigned long before Unicode 15.0 (Go's tables) and unchanged since.
const BLOCKS = [
  [0x20, 0x7e], [0xa0, 0x17e], [0x180, 0x24f], [0x370, 0x3ff], [0x400, 0x4ff], [0x531, 0x556],
  [0x5d0, 0x5ea], [0x600, 0x6ff], [0x900, 0x97f], [0x980, 0x9fe], [0xe01, 0xe5b], [0xe81, 0xe84],
  [0x10a0, 0x10c5], [0x1100, 0x11ff], [0x1e00, 0x1eff], [0x1f00, 0x1ffe], [0x2000, 0x206f],
  [0x2070, 0x209c], [0x20a0, 0x20bf], [0x2100, 0x218b], [0x2190, 0x23ff], [0x2460, 0x24ff],
  [0x2500, 0x27bf], [0x3000, 0x303f], [0x3041, 0x3096], [0x30a0, 0x30ff], [0x3131, 0x318e],
  [0x4e00, 0x9fa5], [0xac00, 0xd7a3], [0xf900, 0xfa2d], [0xfe30, 0xfe4f], [0xff01, 0xffef],
  [0x10300, 0x1031e], [0x1d400, 0x1d7ff], [0x1f300, 0x1f64f], [0x1f680, 0x1f6d2], [0x1f900, 0x1f9ff],
  [0x20000, 0x2a6d6],
];

const WORDS = {
  en: "the quick brown fox jumps over lazy dog I you we they it's don't can't won't shouldn't she'll we've they're I'm I'd DON'T WE'LL They'RE O'Neil rock'n'roll naïve café résumé coöperate Hello world tokenizer transformer gradient policy reward".split(" "),
  zh: "我们 你好 世界 中文 分词器 模型 训练 强化学习 数据 今天 天气 很好 谢谢 人工智能 语言".split(" "),
  ja: "こんにちは 世界 日本語 カタカナ ひらがな 東京 ありがとう トークナイザー 学習 ー".split(" "),
  ko: "안녕하세요 세계 한국어 토크나이저 학습 감사합니다 데이터".split(" "),
  ar: "مرحبا بالعالم اللغة العربية نموذج تعلم بيانات شكرا".split(" "),
  he: "שלום עולם עברית מודל".split(" "),
  hi: "नमस्ते दुनिया हिन्दी भाषा मॉडल प्रशिक्षण धन्यवाद क्षत्रिय".split(" "),
  th: "สวัสดี ชาวโลก ภาษาไทย แบบจำลอง ขอบคุณ".split(" "),
  ru: "Привет мир русский язык модель обучение Україна їжак".split(" "),
  el: "Γειά σου κόσμε ελληνικά μοντέλο".split(" "),
  vi: "Xin chào thế giới Tiếng Việt mô hình học".split(" "),
};

const SPECIALS = ["<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
  "</tool_call>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
  "<|im_sta", "|>", "<|", "<<|im_end|>>", "<|fim_prefix|>", "<|reserved_special_token_5|>"];

const SPACES = [" ", "  ", "   ", "\t", "\t\t", "\n", "\n\n", "\r\n", "\r", " \n", "\n ", "\u00a0", "\u3000", "\u2003", "\u2009", " \t\n", "\u000b", "\u000c", "\u2028", "\u202f", "    "];

const EMOJI = ["😀", "👍🏽", "🇺🇸", "🇯🇵🇫🇷", "👨‍👩‍👧‍👦", "👩🏾‍💻", "❤️", "1️⃣", "🏳️‍🌈", "🧑‍🤝‍🧑", "🤖", "✨", "©️", "🫠", "👁️‍🗨️", "#️⃣", "🏴‍☠️"];

const CODE = [
  "def f(x):\n    return x ** 2  # square\n",
  "for (let i = 0; i < n; i++) {\n\tsum += a[i];\n}\n",
  "func main() {\n\tfmt.Println(\"hi\")\n}\n",
  "SELECT id, name FROM users WHERE age >= 21;\n",
  "if x!=y&&z<=3||w>>=2: pass\n",
  "    \n    \n  indented\n\n\n",
  "<div class=\"a\">&nbsp;</div>\r\n",
  "x = [1,2,3]  \n",
  "// TODO: fix  \t\n",
  "#include <stdio.h>\nint main(){printf(\"%d\\n\", 42);}",
  "λx.λy.x y ⇒ ∀x∈ℝ: x²≥0",
  "$ ls -la ~/.config | grep '^d'\n",
  "{\"key\": [1, 2.5e-3, true, null], \"k2\": \"v\"}",
];

const NUMS = () => ["0", "7", "42", "123", "1234", "12345", "3.14159", "1,000,000", "2024-01-31", "0x1F",
  "١٢٣٤٥", "१२३", "１２３", "²³", "Ⅻ", "½", "੪੫", "๑๒๓", "9999999999999"];

// Real words in many scripts from the ICU data Node carries: names of
// languages, regions, scripts and currencies, months and weekdays, written in
// each of these locales.
const LOCALES = ["en", "de", "fr", "es", "pt", "it", "nl", "pl", "cs", "sv", "fi", "hu", "ro", "tr", "vi", "id",
  "sw", "zh", "zh-Hant", "ja", "ko", "ar", "fa", "ur", "he", "hi", "bn", "pa", "gu", "ta", "te", "kn", "ml", "mr",
  "ne", "si", "th", "lo", "km", "my", "ka", "hy", "am", "el", "ru", "uk", "bg", "sr", "kk", "mn", "yo", "zu"];
const CODES = {
  language: "en fr de es zh ja ko ar hi ru pt it tr vi th fa he sw nl pl uk el cs hu ro sv fi da no bn ta te ml mr ur id ms tl yo zu am ka hy km lo my si ne pa gu kn".split(" "),
  region: "US GB FR DE CN JP KR IN BR RU EG NG ZA MX AR CA AU IT ES TR IR IQ SA TH VN ID PH PK BD ET KE GR IL UA PL SE NO FI".split(" "),
  script: "Latn Cyrl Arab Hans Hant Jpan Kore Deva Beng Thai Grek Hebr Geor Armn Ethi Khmr Taml Telu".split(" "),
  currency: "USD EUR JPY CNY GBP INR RUB BRL KRW TRY".split(" "),
};
export const INTL_WORDS = (() => {
  const words = new Set();
  for (const loc of LOCALES) {
    for (const [type, codes] of Object.entries(CODES)) {
      const dn = new Intl.DisplayNames([loc], { type });
      for (const c of codes) {
        const n = dn.of(c);
        if (n && n !== c) words.add(n);
      }
    }
    for (let m = 0; m < 12; m++) {
      words.add(new Intl.DateTimeFormat(loc, { month: "long", timeZone: "UTC" }).format(Date.UTC(2024, m, 15)));
    }
    for (let d = 0; d < 7; d++) {
      words.add(new Intl.DateTimeFormat(loc, { weekday: "long", timeZone: "UTC" }).format(Date.UTC(2024, 0, 1 + d)));
    }
    words.add(new Intl.NumberFormat(loc).format(1234567.891));
    words.add(new Intl.DateTimeFormat(loc, { dateStyle: "full", timeZone: "UTC" }).format(Date.UTC(2024, 2, 9)));
  }
  return Array.from(words).filter((w) => !Array.from(w).some((c) => EXCLUDED.has(c.codePointAt(0))));
})();

function pick(r, arr) { return arr[Math.floor(r() * arr.length)]; }

function randomCodePoint(r) {
  for (;;) {
    let cp;
    if (r() < 0.15) {
      cp = Math.floor(r() * 0x30000); // anywhere in the first three planes
      const ch = String.fromCodePoint(cp);
      // Unassigned in Unicode 17 (Node's tables) is unassigned in 15.0 too.
      if (!/\p{Cn}/u.test(ch) || (cp >= 0xd800 && cp <= 0xdfff)) continue;
    } else {
      const [lo, hi] = pick(r, BLOCKS);
      cp = lo + Math.floor(r() * (hi - lo + 1));
      if (/\p{Cn}/u.test(String.fromCodePoint(cp))) continue;
    }
    if (EXCLUDED.has(cp)) continue;
    return String.fromCodePoint(cp);
  }
}

function combining(r) {
  const bases = "aeiouAEIOUnNcCsSzZyYwWxhk";
  let s = pick(r, bases.split(""));
  const n = 1 + Math.floor(r() * (r() < 0.1 ? 40 : 4)); // sometimes zalgo
  for (let i = 0; i < n; i++) s += String.fromCodePoint(0x300 + Math.floor(r() * 0x70));
  return s;
}

function sentence(r, lang) {
  const n = 1 + Math.floor(r() * 12);
  const ws = [];
  for (let i = 0; i < n; i++) ws.push(pick(r, WORDS[lang]));
  const sep = ["zh", "ja", "th"].includes(lang) && r() < 0.5 ? "" : " ";
  return ws.join(sep) + pick(r, [".", "!", "?", "。", "", "...", "؟", "।", ","]);
}

function intlSentence(r) {
  const n = 1 + Math.floor(r() * 10);
  const ws = [];
  for (let i = 0; i < n; i++) ws.push(pick(r, INTL_WORDS));
  return ws.join(pick(r, [" ", " ", ", ", "", "、", " - "]));
}

function piece(r) {
  const k = r();
  if (k < 0.12) return sentence(r, pick(r, Object.keys(WORDS)));
  if (k < 0.25) return intlSentence(r);
  if (k < 0.35) return pick(r, SPACES);
  if (k < 0.45) return pick(r, NUMS());
  if (k < 0.52) return pick(r, EMOJI);
  if (k < 0.60) return pick(r, CODE);
  if (k < 0.66) return pick(r, SPECIALS);
  if (k < 0.74) return combining(r);
  if (k < 0.82) {
    let s = "";
    const n = 1 + Math.floor(r() * 8);
    for (let i = 0; i < n; i++) s += randomCodePoint(r);
    return s;
  }
  if (k < 0.88) return pick(r, ["'s", "'S", "'t", "'re", "'RE", "'Ve", "'m", "'ll", "'LL", "'d", "'x", "''", "'"]) + (r() < 0.5 ? pick(r, WORDS.en) : "");
  if (k < 0.94) return pick(r, "!@#$%^&*()_+-=[]{};:'\",.<>/?\\|`~…—–«»„“”‘’¿¡§¶•".split("")).repeat(1 + Math.floor(r() * 4));
  return pick(r, WORDS.en).toUpperCase();
}

// corpus returns n strings; the first ones are fixed cases people look at.
export function corpus(n, seed = 26) {
  const fixed = [
    "", " ", "  ", "\n", "\r\n", "\t", "Hello world", "Hello, world!", " Hello  world  ", "trailing   ",
    "   leading", "a\n\nb", "a \n b", "a  \n\n  b", "x\r\n\r\ny", "I'm", "I'M", "don't", "DON'T", "'s'S'T",
    "12345678901234567890", "3.14", "1,000", "١٢٣", "２０２４年", "Ⅻ½²", "你好，世界！", "こんにちは世界",
    "안녕하세요", "مرحبا بالعالم", "नमस्ते", "สวัสดีครับ", "e\u0301", "\u00e9", "n\u0303o", "\u1e9b\u0323",
    "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", "<think>\nok\n</think>\n\n", "<|endoftext|>",
    "<|begin_of_text|><|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>", "<|im_start|><|im_start|>",
    "a<|im_end|>b", "<|im_end", "<<|im_end|>>", "👨‍👩‍👧‍👦", "🇺🇸🇬🇧", "1️⃣", "\ud800", "a\udfffb",
    "def f():\n\treturn 1\n", "    x = 1  \n", "\u00a0\u00a0x", "x\u3000y", "a\u2028b",
  ];
  const out = fixed.slice();
  const r = rng(seed);
  while (out.length < n) {
    const parts = 1 + Math.floor(r() * 8);
    let s = "";
    for (let i = 0; i < parts; i++) {
      s += piece(r);
      if (r() < 0.3) s += pick(r, SPACES);
    }
    // Half the combining text in NFD, so that normalization has work to do.
    if (r() < 0.2) s = s.normalize("NFD");
    if (r() < 0.02) s = s.repeat(1 + Math.floor(r() * 20)); // long inputs
    out.push(s);
  }
  return out;
}
