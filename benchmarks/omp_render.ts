// omp's snapcompact renderMany() on a text file, each frame written as a PNG (cold start)
import { renderMany } from "@oh-my-pi/snapcompact";
import { mkdirSync, writeFileSync } from "node:fs";
const [file, out] = process.argv.slice(2);
const text = await Bun.file(file).text();
const model = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" };
const frames = await renderMany(text, { model } as any);
mkdirSync(out, { recursive: true });
frames.forEach((f, i) => writeFileSync(`${out}/page-${String(i + 1).padStart(4, "0")}.png`, Buffer.from(f.data, "base64")));
console.log(JSON.stringify({ pages: frames.length }));
