// PowerContext automatic recall for DSH (DeepSeek Harness), written by `powercontext hosts install dsh`.
//
// A Cordis plugin, loaded by DSH from the home patch layer ($DSH_HOME/cordis.patch.yml) install marks. On
// the first `agent/pre-step` of each turn (step 1: the user's prompt entering the agent) it runs the
// PowerContext hook (`python -m powercontext.hosts.hook dsh`: Scope, bounded query, strict four-key
// validation, fail-open) within the hook budget and adds the validated content as one more user message
// entering that step, so it reaches the model beside the prompt. It acts only in a project where install
// wrote `.dsh/powercontext.json`. When a turn is about to close (`agent/turn-stopping`), the last assistant
// message's text (the final answer) is handed to `hook dsh stop` (capture, a `reply` Source) without waiting for
// it. DSH aborts the prompt when a pre-step listener throws, so everything of
// ours is caught; only what the rest of the chain (`next()`) throws is DSH's own and passes through. The
// file names no machine-specific path: the interpreter that has PowerContext is POWERCONTEXT_PYTHON, else
// the one install recorded for the project on this machine, else the one that runs `powercontext` on PATH.
import { randomUUID } from "node:crypto"
// @powercontext-recall-runner: install puts assets/recall_runner.js here

const HOST = "dsh"
const OPT_IN = join(".dsh", "powercontext.json")

export const name = "powercontext-recall"

// The directory holding the opt-in file: cwd or its nearest parent that has one.
function optedIn(cwd) {
  for (let dir = cwd; dir; dir = dirname(dir)) {
    if (isFile(join(dir, OPT_IN))) return true
    if (dirname(dir) === dir) break
  }
  return false
}

// What the user typed: the text blocks of the user-authored messages entering the step.
function promptOf(messages) {
  const texts = []
  for (const message of Array.isArray(messages) ? messages : []) {
    if (message?.role !== "user" || message?.source?.kind !== "user" || !Array.isArray(message.content)) continue
    for (const block of message.content) {
      if (block?.type === "text" && typeof block.text === "string") texts.push(block.text)
    }
  }
  return texts.join("\n")
}

// One user message, frozen as DSH freezes its own (`createUserMessage` of @deepseek-ai/dsh-llm).
function contextMessage(text) {
  const content = [Object.freeze({ type: "text", text })]
  const source = Object.freeze({ kind: "plugin", plugin: name })
  return Object.freeze({ role: "user", content: Object.freeze(content), source, id: randomUUID() })
}

// The text of the last assistant message in the agent's session: the turn's final answer when it stops.
function finalAnswer(agent) {
  const messages = agent?.session?.deriveMessages?.()
  const last = Array.isArray(messages) ? [...messages].reverse().find((m) => m?.role === "assistant") : undefined
  const blocks = Array.isArray(last?.content) ? last.content : []
  return blocks
    .filter((block) => block?.type === "text" && typeof block.text === "string")
    .map((block) => block.text)
    .join("\n")
    .trim()
}

export function apply(ctx) {
  // Capture of the final answer (a `reply` Source): handed to `hook dsh stop` without waiting for it.
  ctx.on("agent/turn-stopping", (payload) => {
    try {
      const cwd = process.cwd()
      if (payload?.signal?.aborted || !optedIn(cwd)) return
      const agent = payload?.agent
      captureReply(finalAnswer(agent), cwd, typeof agent?.id === "string" ? agent.id : undefined)
    } catch {
      // fail open: the turn closes as it would have
    }
  })
  ctx.on("agent/pre-step", async (payload, next) => {
    const decision = await next()
    try {
      if (payload?.step !== 1 || decision?.kind === "reject" || payload?.signal?.aborted) return decision
      const messages = Array.isArray(decision?.messages) ? decision.messages : []
      const prompt = promptOf(messages)
      const cwd = process.cwd()
      if (!prompt.trim() || !optedIn(cwd)) return decision
      const content = await recall(prompt, cwd)
      if (!content || payload?.signal?.aborted) return decision
      return { ...decision, messages: [...messages, contextMessage(content)] }
    } catch {
      return decision // fail open: the step goes on with the messages it had
    }
  })
}
