// Writes agents/lm/tokenizer's golden files from the JavaScript reference
// (transformers.js's tokenizers, packaged by @lenml):
//   testdata/<name>/tokenizer.json.gz  pruned copies of the tokenizers that
//                                      may be redistributed (Qwen3: Apache-2.0,
//                                      GPT-2: MIT, and files built from GPT-2's)
//   testdata/golden.jsonl.gz           the corpus and each tokenizer's ids
// Usage: node generate.mjs [N]   (N strings, default 10000)
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { TokenizerLoader } from "@lenml/tokenizers";
import { corpus, rng } from "./corpus.mjs";

const here = path.dirname(fileURLToPath(import.meta.url));
const testdata = path.resolve(here, "../../agents/lm/tokenizer/testdata");
const models = (pkg) => path.join(here, "node_modules/@lenml", pkg, "models");
const readJSON = (p) => JSON.parse(fs.readFileSync(p, "utf8"));
const load = (json, cfg) => TokenizerLoader.fromPreTrained({ tokenizerJSON: json, tokenizerConfig: cfg });

const N = Number(process.argv[2] || 10000);
const texts = corpus(N);

// The reference files, and the ones built from GPT-2's vocabulary in the
// shapes of Llama-3 (its regex, ignore_merges, a BOS template) and SmolLM
// (Digits then ByteLevel with GPT-2's regex; SmolLM's special tokens).
const gpt2 = readJSON(path.join(models("tokenizer-gpt2"), "tokenizer.json"));
const gpt2cfg = readJSON(path.join(models("tokenizer-gpt2"), "tokenizer_config.json"));
const llama3 = readJSON(path.join(models("tokenizer-llama3_2"), "tokenizer.json"));
const llama3cfg = readJSON(path.join(models("tokenizer-llama3_2"), "tokenizer_config.json"));
const qwen3 = readJSON(path.join(models("tokenizer-qwen3"), "tokenizer.json"));
const qwen3cfg = readJSON(path.join(models("tokenizer-qwen3"), "tokenizer_config.json"));

const added = (id, content, special = true) => ({ id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special });
const llama3Style = structuredClone(gpt2);
llama3Style.added_tokens = [added(50256, "<|endoftext|>"), added(50257, "<|begin_of_text|>"), added(50258, "<|eot_id|>"),
  added(50259, "<|start_header_id|>"), added(50260, "<|end_header_id|>")];
llama3Style.pre_tokenizer = structuredClone(llama3.pre_tokenizer);
llama3Style.post_processor = structuredClone(llama3.post_processor);
llama3Style.post_processor.processors[1].special_tokens = { "<|begin_of_text|>": { id: "<|begin_of_text|>", ids: [50257], tokens: ["<|begin_of_text|>"] } };
llama3Style.model.ignore_merges = true;
const llama3StyleCfg = { bos_token: "<|begin_of_text|>", eos_token: "<|eot_id|>", clean_up_tokenization_spaces: false, tokenizer_class: "PreTrainedTokenizerFast" };

const smolStyle = structuredClone(gpt2);
smolStyle.added_tokens = [added(50256, "<|endoftext|>"), added(50257, "<|im_start|>"), added(50258, "<|im_end|>"),
  added(50259, "<repo_name>"), added(50260, "<file_sep>")];
smolStyle.pre_tokenizer = { type: "Sequence", pretokenizers: [{ type: "Digits", individual_digits: true },
  { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }] };
const smolStyleCfg = { bos_token: "<|im_start|>", eos_token: "<|im_end|>", pad_token: "<|im_end|>", unk_token: "<|endoftext|>", clean_up_tokenization_spaces: false, tokenizer_class: "GPT2Tokenizer" };

const charPath = path.join(testdata, "char", "tokenizer.json");
const sets = [
  { name: "qwen3", json: qwen3, cfg: qwen3cfg, commit: true },
  { name: "llama3", json: llama3, cfg: llama3cfg, commit: false },
  { name: "gpt2", json: gpt2, cfg: { ...gpt2cfg, clean_up_tokenization_spaces: false }, commit: true },
  { name: "llama3-style", json: llama3Style, cfg: llama3StyleCfg, commit: true },
  // transformers.js's Digits uses \d (ASCII digits only) where tokenizers
  // uses char::is_numeric: strings with other numerals are left out here.
  { name: "smollm-style", json: smolStyle, cfg: smolStyleCfg, commit: true, skip: (s) => /(?![0-9])\p{N}/u.test(s) },
];
if (fs.existsSync(charPath)) {
  sets.push({ name: "char", json: readJSON(charPath), cfg: readJSON(path.join(testdata, "char", "tokenizer_config.json")), commit: false });
}

for (const set of sets) set.tok = load(set.json, set.cfg);

// preTokens returns the pieces BPE sees (in the ByteLevel alphabet).
function preTokens(tok, text) {
  const out = [];
  for (const x of tok.added_tokens_splitter.split(text)) {
    if (tok.added_tokens_map.has(x) || x.length === 0) continue;
    let s = tok.normalizer ? tok.normalizer(x) : x;
    if (s.length === 0) continue;
    out.push(...(tok.pre_tokenizer ? tok.pre_tokenizer(s) : [s]));
  }
  return out;
}

// prune keeps the vocabulary entries that occur inside some piece of the
// corpus, and the merges among them: a merge only ever joins two parts of a
// piece into a longer part of it, so the pruned file encodes the corpus
// exactly as the full one (checked below).
function prune(set, pieces) {
  const subs = new Set();
  for (const p of pieces) {
    const cs = Array.from(p);
    for (let i = 0; i < cs.length; i++) {
      let s = "";
      for (let j = i; j < cs.length && j - i < 64; j++) { s += cs[j]; subs.add(s); }
    }
  }
  const json = structuredClone(set.json);
  const vocab = {};
  for (const [t, id] of Object.entries(json.model.vocab)) {
    if (subs.has(t) || Array.from(t).length === 1) vocab[t] = id;
  }
  for (const a of json.added_tokens) if (a.content in json.model.vocab) vocab[a.content] = a.id;
  const pair = (m) => (Array.isArray(m) ? m : m.split(" "));
  json.model.vocab = vocab;
  json.model.merges = json.model.merges.filter((m) => { const [a, b] = pair(m); return a in vocab && b in vocab && (a + b) in vocab; });
  return json;
}

const ids = texts.map(() => ({}));
for (const set of sets) {
  let skipped = 0;
  texts.forEach((s, i) => {
    if (set.skip && set.skip(s)) { skipped++; return; }
    ids[i][set.name] = set.tok.encode(s, { add_special_tokens: false });
  });
  console.error(`${set.name}: ${texts.length - skipped} strings encoded`);
  if (!set.commit) continue;
  const pieces = new Set();
  for (const s of texts) for (const p of preTokens(set.tok, s)) pieces.add(p);
  const pruned = prune(set, pieces);
  const ptok = load(pruned, set.cfg);
  let bad = 0;
  texts.forEach((s, i) => {
    const want = ids[i][set.name];
    if (want && JSON.stringify(ptok.encode(s, { add_special_tokens: false })) !== JSON.stringify(want)) bad++;
  });
  if (bad) throw new Error(`${set.name}: the pruned file differs from the full one on ${bad} strings`);
  // Random id sequences (bytes of characters cut apart included) and their
  // decoded text, for Decode.
  const r = rng(7);
  const pool = Object.values(pruned.model.vocab).concat(pruned.added_tokens.map((a) => a.id));
  const decodes = [];
  for (let k = 0; k < 500; k++) {
    const n = 1 + Math.floor(r() * 12);
    const seq = [];
    for (let j = 0; j < n; j++) seq.push(pool[Math.floor(r() * pool.length)]);
    decodes.push({ ids: seq, text: ptok.decode(seq, { clean_up_tokenization_spaces: false }),
      skip: ptok.decode(seq, { clean_up_tokenization_spaces: false, skip_special_tokens: true }) });
  }
  const dir = path.join(testdata, set.name);
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, "tokenizer.json.gz"), zlib.gzipSync(JSON.stringify(pruned), { level: 9 }));
  const cfg = { ...set.cfg };
  fs.writeFileSync(path.join(dir, "tokenizer_config.json"), JSON.stringify(cfg, null, 2) + "\n");
  fs.writeFileSync(path.join(dir, "decode.json"), JSON.stringify(decodes) + "\n");
  console.error(`${set.name}: pruned to ${Object.keys(pruned.model.vocab).length} tokens, ${pruned.model.merges.length} merges`);
}
// Each string's ids are stored as "count:hash" (FNV-1a, 32 bits, over the
// ids as little-endian uint32s) to keep the file small; a mismatch prints the
// Go ids, and `node encode.mjs NAME TEXT` prints the reference's.
function digest(list) {
  let h = 0x811c9dc5;
  for (const id of list) {
    for (let k = 0; k < 4; k++) {
      h ^= (id >>> (8 * k)) & 0xff;
      h = Math.imul(h, 0x01000193) >>> 0;
    }
  }
  return `${list.length}:${h.toString(16).padStart(8, "0")}`;
}
const lines = [JSON.stringify({ strings: texts.length, tokenizers: sets.map((s) => s.name), reference: "@lenml/tokenizers 3.7.2", ids: "count:fnv1a32" })];
texts.forEach((s, i) => {
  const h = {};
  for (const [k, v] of Object.entries(ids[i])) h[k] = digest(v);
  lines.push(JSON.stringify({ s, ids: h }));
});
fs.writeFileSync(path.join(testdata, "golden.jsonl.gz"), zlib.gzipSync(lines.join("\n") + "\n", { level: 9 }));
console.error(`wrote ${texts.length} strings to ${path.join(testdata, "golden.jsonl.gz")}`);
