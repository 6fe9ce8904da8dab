//go:build unix

package wiki

import "syscall"

// noFollow makes opening a symlink fail instead of reading its target.
const noFollow = syscall.O_NOFOLLOW
