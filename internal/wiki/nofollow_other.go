//go:build !unix

package wiki

const noFollow = 0
