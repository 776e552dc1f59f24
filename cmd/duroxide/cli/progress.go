package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// progressBar draws "[####    ] 12/40 cancel" on one line of w, redrawn
// in place.
type progressBar struct {
	w     io.Writer
	label string
	last  int
}

const barWidth = 30

func (p *progressBar) update(done, total int) {
	if total <= 0 {
		return
	}
	filled := done * barWidth / total
	// Redraw only when the line changes, so a long run does not flood a
	// log that captures standard error.
	if filled == p.last && done != total {
		return
	}
	p.last = filled
	fmt.Fprintf(p.w, "\r[%s%s] %d/%d %s", strings.Repeat("#", filled), strings.Repeat(" ", barWidth-filled), done, total, p.label)
	if done == total {
		fmt.Fprintln(p.w)
	}
}

// isTerminal reports whether w is a character device (a terminal).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}
