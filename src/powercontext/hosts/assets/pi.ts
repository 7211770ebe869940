// PowerContext automatic recall for Pi, written by `powercontext hosts install pi`.
//
// Before each user prompt reaches the model, the PowerContext hook (`python -m powercontext.hosts.hook
// pi`) prepares context for it: the Scope from the project's `.powercontext.toml`, the strict
// four-key validation of the Server's answer, fail-open on any problem. This file only runs that hook
// within the hook budget and hands its content to Pi (a `before_agent_start` message). It holds no machine-specific path, so the
// project can commit it: the interpreter is POWERCONTEXT_PYTHON, else the one that runs `powercontext`
// on PATH. When the agent ends its run, the last assistant message's text (its final answer) is handed to
// `hook pi stop` (capture, a `reply` Source) without waiting for it. Pi puts no timeout on an extension's event handler, so every path here is bounded by POWERCONTEXT_HOOK_TIMEOUT_MS (default 1500) + 0.4 s and catches everything.
// @powercontext-recall-runner: install puts assets/recall_runner.js here

const HOST = "pi"

export default function powercontextRecall(pi: any) {
  pi.on("before_agent_start", async (event: any, ctx: any) => {
    try {
      const prompt = typeof event?.prompt === "string" ? event.prompt : ""
      if (!prompt.trim()) return undefined
      const cwd = event?.systemPromptOptions?.cwd || ctx?.cwd || process.cwd()
      const content = await recall(prompt, cwd)
      if (!content) return undefined
      // A message beside the prompt (stored in the session, sent to the model, not shown in the TUI).
      return { message: { customType: "powercontext", content, display: false } }
    } catch {
      return undefined // fail open: the prompt goes through unchanged
    }
  })
  // The agent's final answer: the text of the last assistant message when the agent ends its run (capture, a
  // `reply` Source), handed to the hook without waiting for it.
  pi.on("agent_end", async (event: any, ctx: any) => {
    try {
      const messages = Array.isArray(event?.messages) ? event.messages : []
      const last = [...messages].reverse().find((m: any) => m?.role === "assistant")
      const content = Array.isArray(last?.content) ? last.content : []
      const answer = content
        .filter((part: any) => part?.type === "text" && typeof part.text === "string")
        .map((part: any) => part.text)
        .join("\n")
        .trim()
      const sessionId = ctx?.sessionManager?.getSessionId?.()
      captureReply(answer, ctx?.cwd || process.cwd(), sessionId)
    } catch {
      // fail open
    }
  })
}
