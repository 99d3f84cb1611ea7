// The openai npm package as a harness would use it, pointed at glyphfold serve.
// Env: GLYPHFOLD_URL (the proxy), MODEL, HISTORY (a JSON file of chat messages).
// Prints one JSON line per call; exits non-zero on any failure.
import { readFileSync } from "node:fs";
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: `${process.env.GLYPHFOLD_URL}/v1`,
  apiKey: "sk-node-test",
  maxRetries: 0,
  timeout: 30_000,
});
const model = process.env.MODEL;
const messages = JSON.parse(readFileSync(process.env.HISTORY, "utf8"));
const before = JSON.stringify(messages);

const { data, response } = await client.chat.completions
  .create({ model, messages })
  .withResponse();
console.log(JSON.stringify({
  mode: "plain",
  text: data.choices[0].message.content,
  tokens: response.headers.get("x-glyphfold-tokens"),
  rungs: response.headers.get("x-glyphfold-rungs"),
}));

const stream = await client.chat.completions.create({ model, messages, stream: true });
let text = "";
for await (const chunk of stream) {
  text += chunk.choices[0]?.delta?.content ?? "";
}
console.log(JSON.stringify({ mode: "stream", text }));

try {
  await client.chat.completions.create({
    model: "gpt-4o",
    messages: [{ role: "user", content: "x" }],
  }, { headers: { "x-fake-fault": "500" } });
  console.log(JSON.stringify({ mode: "error", status: null }));
} catch (err) {
  console.log(JSON.stringify({ mode: "error", status: err.status, type: err.error?.type }));
}

if (JSON.stringify(messages) !== before) {
  throw new Error("the client's messages were changed");
}
