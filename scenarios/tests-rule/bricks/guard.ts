// A pi extension that refuses destructive shell commands.
import type { ExtensionAPI } from "@earendil-works/pi-coding-agent";

export default function (pi: ExtensionAPI) {
  pi.on("tool_call", async (event) => {
    if (event.toolName === "bash" && /rm -rf|git push/.test(String(event.input.command))) {
      return { block: true, reason: "destructive command refused by the guard extension" };
    }
  });
}
