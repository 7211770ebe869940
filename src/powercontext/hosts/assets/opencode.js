// PowerContext automatic recall for OpenCode, written by `powercontext hosts install opencode`.
//
// Before each user prompt reaches the model, the PowerContext hook (`python -m powercontext.hosts.hook
// opencode`) prepares context for it: the Scope from the project's `.powercontext.toml`, the strict
// four-key validation of the Server's answer, fail-open on any problem. This file only runs that hook
// within the hook budget and hands its content to OpenCode. It holds no machine-specific path, so the
// project can commit it: the interpreter is POWERCONTEXT_PYTHON, else the one that runs `powercontext`
// on PATH. When a session goes idle, its last assistant message's text (the turn's final answer) is handed
// to `hook opencode stop` (capture, a `reply` Source) without waiting for it. OpenCode puts no timeout on a plugin hook and aborts the prompt when one throws, so every
// path here is bounded by POWERCONTEXT_HOOK_TIMEOUT_MS (default 1500) + 0.4 s and catches everything.
// @powercontext-recall-runner: install puts assets/recall_runner.js here

const HOST = "opencode"
const REMEMBERED_MESSAGES = 64

export const PowerContextRecall = async ({ directory }) => {
  // messageID -> prepared context; chat.message fills it once per prompt, the transform adds it to every
  // model call of that turn (in memory only: the stored session keeps the user's message as typed).
  const contexts = new Map()
  // sessionID -> the text parts of its latest assistant message, as each part completes; sent as the turn's
  // final answer (capture, a `reply` Source) when the session goes idle.
  const answers = new Map()
  return {
    "experimental.text.complete": async (input, output) => {
      try {
        const { sessionID, messageID, partID } = input ?? {}
        if (!sessionID || !messageID || typeof output?.text !== "string") return
        let answer = answers.get(sessionID)
        if (answer?.messageID !== messageID) answer = { messageID, parts: new Map() }
        answer.parts.set(partID, output.text)
        answers.delete(sessionID)
        answers.set(sessionID, answer)
        while (answers.size > REMEMBERED_MESSAGES) answers.delete(answers.keys().next().value)
      } catch {
        // fail open: the text goes on unchanged
      }
    },
    event: async ({ event }) => {
      try {
        const sessionID = event?.properties?.sessionID
        const idle = event?.type === "session.idle" || (event?.type === "session.status" && event?.properties?.status?.type === "idle")
        const answer = idle ? answers.get(sessionID) : undefined
        if (!answer) return
        answers.delete(sessionID)
        captureReply([...answer.parts.values()].join("\n").trim(), directory || process.cwd(), sessionID)
      } catch {
        // fail open
      }
    },
    "chat.message": async (_input, output) => {
      try {
        const parts = Array.isArray(output?.parts) ? output.parts : []
        const prompt = parts
          .filter((part) => part?.type === "text" && !part.synthetic && typeof part.text === "string")
          .map((part) => part.text)
          .join("\n")
        const id = output?.message?.id
        if (!id || !prompt.trim()) return
        const content = await recall(prompt, directory || process.cwd())
        if (!content) return
        contexts.set(id, content)
        while (contexts.size > REMEMBERED_MESSAGES) contexts.delete(contexts.keys().next().value)
      } catch {
        // fail open: the prompt goes through unchanged
      }
    },
    "experimental.chat.messages.transform": async (_input, output) => {
      try {
        for (const message of output?.messages ?? []) {
          const info = message?.info
          const content = info?.role === "user" ? contexts.get(info.id) : undefined
          if (!content || !Array.isArray(message.parts)) continue
          const id = `prt_powercontext_${info.id}`
          if (message.parts.some((part) => part?.id === id)) continue
          message.parts.push({ id, sessionID: info.sessionID, messageID: info.id, type: "text", text: content, synthetic: true })
        }
      } catch {
        // fail open
      }
    },
  }
}
