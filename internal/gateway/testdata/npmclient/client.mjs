// Drives the Hestia gateway with the official openai npm package and prints
// what it saw as one JSON object; gateway_npm_test.go asserts on it.
// Usage: GATEWAY_URL=http://127.0.0.1:PORT/v1 GATEWAY_TOKEN=... node client.mjs
import OpenAI from "openai";

const client = new OpenAI({
  baseURL: process.env.GATEWAY_URL,
  apiKey: process.env.GATEWAY_TOKEN,
  maxRetries: 0,
  defaultHeaders: { "x-usage-service": "npm-test", "x-usage-action": "compat" },
});

const tools = [{
  type: "function",
  function: { name: "mail_search", description: "search mail", parameters: { type: "object", properties: { q: { type: "string" } } } },
}];

const out = {};

const plain = await client.chat.completions.create({
  model: "tier-3",
  messages: [{ role: "user", content: "hello" }],
});
out.plain = { text: plain.choices[0].message.content, finish: plain.choices[0].finish_reason, usage: plain.usage };

// The SDK's stream helper assembles tool-call deltas itself.
const runner = client.chat.completions.stream({
  model: "tier-3",
  messages: [{ role: "user", content: "search" }],
  tools,
  stream_options: { include_usage: true },
});
let deltas = "";
runner.on("content", (d) => { deltas += d; });
const final = await runner.finalChatCompletion();
const msg = final.choices[0].message;
out.stream = {
  deltas,
  text: msg.content,
  finish: final.choices[0].finish_reason,
  toolCalls: (msg.tool_calls || []).map((c) => ({ id: c.id, name: c.function.name, args: c.function.arguments })),
  usage: final.usage,
};

// Embeddings: the SDK asks for base64 by default and decodes it.
const emb = await client.embeddings.create({ model: "local-embed", input: ["invoice march", "flight berlin"] });
out.embeddings = { count: emb.data.length, dim: emb.data[0].embedding.length, first: emb.data[1].embedding.slice(0, 4) };

const models = [];
for await (const m of client.models.list()) models.push(m.id);
out.models = models;

try {
  await client.chat.completions.create({ model: "gpt-4o", messages: [{ role: "user", content: "x" }] });
  out.error = null;
} catch (e) {
  out.error = { status: e.status, code: e.code };
}

process.stdout.write(JSON.stringify(out));
