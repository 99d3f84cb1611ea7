// omp's snapcompact compact() on a glyphfold synthetic history (Anthropic JSON file), CPU timed
import { compact, createFileOps } from "@oh-my-pi/snapcompact";
const [file] = process.argv.slice(2);
const h = JSON.parse(await Bun.file(file).text());
const msgs: any[] = [];
const names = new Map<string, string>();
let t = 0;
for (const m of h.messages) {
  if (typeof m.content === "string") { msgs.push({ role: m.role, content: m.content, timestamp: t++ }); continue; }
  if (m.role === "assistant") {
    const content = m.content.map((b: any) => b.type === "text" ? { type: "text", text: b.text }
      : { type: "toolCall", id: b.id, name: b.name, arguments: b.input });
    for (const b of m.content) if (b.type === "tool_use") names.set(b.id, b.name);
    msgs.push({ role: "assistant", content, timestamp: t++, api: "anthropic-messages", provider: "anthropic", model: "claude-sonnet-4-5", usage: {}, stopReason: "toolUse" });
  } else {
    for (const b of m.content) {
      if (b.type === "tool_result") msgs.push({ role: "toolResult", toolCallId: b.tool_use_id, toolName: names.get(b.tool_use_id) ?? "bash", content: [{ type: "text", text: b.content }], isError: false, timestamp: t++ });
      else msgs.push({ role: "user", content: b.text ?? "", timestamp: t++ });
    }
  }
}
const model = { api: "anthropic-messages", provider: "anthropic", id: "claude-sonnet-4-5" };
const prep = () => ({ firstKeptEntryId: "keep", messagesToSummarize: msgs.slice(0, -2), turnPrefixMessages: [], tokensBefore: 0, fileOps: createFileOps() });
await compact({ ...prep(), messagesToSummarize: msgs.slice(0, 60) } as any, { model } as any); // warm
const c0 = process.cpuUsage();
const r = await compact(prep() as any, { model } as any);
const c1 = process.cpuUsage(c0);
const frames = (r.preserveData as any)?.snapcompact?.frames?.length ?? JSON.stringify(r.preserveData ?? {}).length;
console.log(JSON.stringify({ cpu_s: (c1.user + c1.system) / 1e6, frames, rss_mib: process.memoryUsage.rss() / 2 ** 20 }));
