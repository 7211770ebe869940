// PowerContext automatic recall for OpenCode, written by `powercontext hosts install opencode`.
//
// Before each user prompt reaches the model, the PowerContext hook (`python -m powercontext.hosts.hook
// opencode`) prepares context for it: the Scope from the project's `.powercontext.toml`, the strict
// four-key validation of the Server's answer, fail-open on any problem. This file only runs that hook
// within the hook budget and hands its content to OpenCode. It holds no machine-specific path, so the
// project can commit it: the interpreter is POWERCONTEXT_PYTHON, else the one that runs `powercontext`
// on PATH. OpenCode puts no timeout on a plugin hook and aborts the prompt when one throws, so every
// path here is bounded by POWERCONTEXT_HOOK_TIMEOUT_MS (default 1500) + 0.4 s and catches everything.
import { spawn } from "node:child_process"
import { readFileSync, statSync } from "node:fs"
import { delimiter, join } from "node:path"

const HOST = "opencode"
const HOOK_MODULE = "powercontext.hosts.hook"
const MAX_OUTPUT_BYTES = 1024 * 1024
// The hook applies the budget to its own request; this covers starting the interpreter on a busy machine.
const START_ALLOWANCE_MS = 400
const REMEMBERED_MESSAGES = 64

function budgetMs() {
  const value = Number.parseInt(process.env.POWERCONTEXT_HOOK_TIMEOUT_MS ?? "", 10)
  return Number.isFinite(value) && value > 0 ? Math.min(Math.max(value, 50), 60000) : 1500
}

function isFile(path) {
  try {
    return statSync(path).isFile()
  } catch {
    return false
  }
}

// The interpreter that has PowerContext: POWERCONTEXT_PYTHON, else the `#!` line of `powercontext` on PATH.
function hookCommand() {
  const python = (process.env.POWERCONTEXT_PYTHON ?? "").trim()
  if (python) return [python, "-m", HOOK_MODULE, HOST]
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    const script = dir ? join(dir, "powercontext") : ""
    if (!script || !isFile(script)) continue
    try {
      const first = readFileSync(script, "utf8").slice(0, 4096).split("\n", 1)[0]
      const interpreter = first.startsWith("#!") ? first.slice(2).trim() : ""
      if (interpreter && !/\s/.test(interpreter) && isFile(interpreter)) return [interpreter, "-m", HOOK_MODULE, HOST]
    } catch {
      // unreadable: try the next PATH entry
    }
  }
  return null
}

function contextFrom(stdout) {
  const text = stdout.trim()
  if (!text) return null
  const output = JSON.parse(text)
  const content = output?.hookSpecificOutput?.additionalContext
  return typeof content === "string" && content ? content : null
}

// The validated context for one prompt, or null (no context, timeout, no interpreter, any error).
function recall(prompt, cwd) {
  return new Promise((resolve) => {
    let settled = false
    let child = null
    let timer = null
    const finish = (value) => {
      if (settled) return
      settled = true
      if (timer) clearTimeout(timer)
      if (child && child.exitCode === null) child.kill("SIGKILL")
      resolve(value)
    }
    try {
      const command = hookCommand()
      if (!command) return finish(null)
      timer = setTimeout(() => finish(null), budgetMs() + START_ALLOWANCE_MS)
      child = spawn(command[0], command.slice(1), { cwd, stdio: ["pipe", "pipe", "ignore"] })
      const chunks = []
      let size = 0
      child.stdout.on("data", (chunk) => {
        size += chunk.length
        if (size <= MAX_OUTPUT_BYTES) chunks.push(chunk)
      })
      child.on("error", () => finish(null))
      child.on("close", () => {
        try {
          finish(size <= MAX_OUTPUT_BYTES ? contextFrom(Buffer.concat(chunks).toString("utf8")) : null)
        } catch {
          finish(null)
        }
      })
      child.stdin.on("error", () => {})
      child.stdin.end(JSON.stringify({ hook_event_name: "UserPromptSubmit", prompt, cwd }))
    } catch {
      finish(null)
    }
  })
}

export const PowerContextRecall = async ({ directory }) => {
  // messageID -> prepared context; chat.message fills it once per prompt, the transform adds it to every
  // model call of that turn (in memory only: the stored session keeps the user's message as typed).
  const contexts = new Map()
  return {
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
