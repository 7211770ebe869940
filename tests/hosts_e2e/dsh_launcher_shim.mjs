// Test scaffolding for a bug of DSH 0.1.0-rc.8's launcher, not part of PowerContext's DSH integration.
//
// After booting a profile, rc.8's `runProfile` starts a live-reload service (`@deepseek-ai/cordis-plugin-hmr`,
// which throws unless Node runs with --expose-internals) and calls `hmr.registerConfig`, a method no published
// version of that plugin has (1.0.16, 1.0.17, 1.0.19), so every `dsh` run exits 1 before the prompt. This
// plugin, inserted by the test's own `--patch` overlay, provides an `hmr` service whose `registerConfig`
// watches nothing: the launcher then skips starting the real one and goes on. A one-shot headless run needs
// no live reload. docs/hosts.md (DSH) gives users the same overlay.
export const name = "dsh-launcher-hmr-shim"

export function apply(ctx) {
  ctx.provide("hmr", { registerConfig: async () => async () => {} })
}
