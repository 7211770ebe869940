// The hook runner, the same for every host whose plugin is a JavaScript or TypeScript file (OpenCode, Pi, DSH):
// `powercontext hosts install` copies it into the host's file, whose HOST names the host.
import { spawn } from "node:child_process"
import { readFileSync, statSync } from "node:fs"
import { homedir } from "node:os"
import { delimiter, dirname, join } from "node:path"

const HOOK_MODULE = "powercontext.hosts.hook"
const MAX_OUTPUT_BYTES = 1024 * 1024
// The hook applies the budget to its own request; this covers starting the interpreter on a busy machine.
const START_ALLOWANCE_MS = 400

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

// The interpreter `powercontext hosts install` recorded for the project (or a parent of cwd) on this machine.
function recordedPython(cwd) {
  try {
    const base = (process.env.XDG_CONFIG_HOME ?? "").trim() || join(process.env.HOME || homedir(), ".config")
    const projects = JSON.parse(readFileSync(join(base, "powercontext", "hosts.json"), "utf8"))?.projects ?? {}
    for (let dir = cwd; dir; dir = dirname(dir)) {
      const python = projects[dir]?.python
      if (typeof python === "string" && isFile(python)) return python
      if (dirname(dir) === dir) break
    }
  } catch {
    // no machine settings: fall through to PATH
  }
  return null
}

// The interpreter that has PowerContext: POWERCONTEXT_PYTHON, else the one install recorded for this project
// on this machine, else the `#!` line of `powercontext` on PATH.
function hookCommand(cwd) {
  const python = (process.env.POWERCONTEXT_PYTHON ?? "").trim() || recordedPython(cwd)
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
      const command = hookCommand(cwd)
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


// The hook's input for the agent's final answer must fit an empty pipe (64 KiB on Linux), so that it is handed
// over at once and never waits on the host; a larger answer exceeds the Server's Source limit anyway.
const MAX_REPLY_INPUT_BYTES = 64 * 1024

// Capture of the agent's final answer (`hook HOST stop`: a `reply` Source). Started in its own session and left
// to finish on its own (its request is bounded by the hook budget), so the host never waits for it.
function captureReply(answer, cwd, sessionId) {
  try {
    if (typeof answer !== "string" || !answer.trim()) return
    const command = hookCommand(cwd)
    if (!command) return
    const input = { hook_event_name: "Stop", cwd, last_assistant_message: answer }
    if (typeof sessionId === "string" && sessionId) input.session_id = sessionId
    const payload = Buffer.from(JSON.stringify(input), "utf8")
    if (payload.length > MAX_REPLY_INPUT_BYTES) return
    const child = spawn(command[0], [...command.slice(1), "stop"], {
      cwd,
      detached: true,
      stdio: ["pipe", "ignore", "ignore"],
    })
    child.on("error", () => {})
    child.stdin.on("error", () => {})
    child.stdin.end(payload)
    child.unref()
  } catch {
    // fail open: capture never touches the turn
  }
}
