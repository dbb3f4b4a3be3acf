// Times llama.cpp (through node-llama-cpp's bindings, CPU only) the way
// `driftwood bench` times Driftwood: prefill of a prompt of random
// ordinary tokens, then greedy decoding on top of it. Prints one JSON line.
//
//   node llamacpp.mjs MODEL.gguf PROMPT_TOKENS GEN_TOKENS THREADS
import {getLlama, LlamaLogLevel} from "node-llama-cpp";

const [modelPath, promptArg, genArg, threadsArg] = process.argv.slice(2);
const promptN = Number(promptArg), genN = Number(genArg), threads = Number(threadsArg);

const llama = await getLlama({gpu: false, build: "never", logLevel: LlamaLogLevel.error});
const model = await llama.loadModel({modelPath, gpuLayers: 0});
const context = await model.createContext({
    contextSize: promptN + genN + 8, batchSize: Math.max(promptN, 1), threads, sequences: 1,
});
const sequence = context.getSequence();

// Random ordinary tokens (below the first special token), a fixed seed.
let seed = 12345;
const prompt = Array.from({length: promptN}, () => {
    seed = (seed * 1103515245 + 12345) % 2147483648;
    return seed % 128000;
});

let start = performance.now();
await sequence.evaluateWithoutGeneratingNewTokens(prompt);
const prefill = promptN / ((performance.now() - start) / 1000);

// Decode: each step feeds the previous token and samples greedily.
let n = 0;
start = performance.now();
for await (const token of sequence.evaluate([prompt[0]], {temperature: 0})) {
    if (++n >= genN) break;
}
const decode = n / ((performance.now() - start) / 1000);

console.log(JSON.stringify({prefill_tok_per_s: prefill, decode_tok_per_s: decode, threads}));
await context.dispose();
await model.dispose();
await llama.dispose();
