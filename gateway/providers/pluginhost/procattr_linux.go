package pluginhost

import (
	"os/exec"
	"syscall"
)

// dieWithParent asks the kernel to send the plugin SIGKILL when the
// gateway dies, even by SIGKILL, which the gateway cannot handle: a crash
// loop under a supervisor must not pile up orphaned plugins. (The signal
// follows the thread that forked, and Go only ends a thread whose
// goroutine exits while locked to it, which the gateway never does;
// sdk.Serve also watches its parent, on every system.)
func dieWithParent(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
