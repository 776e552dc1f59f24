package cli

import (
	"fmt"
	"io"
	"os"
	"strings"
)

// progressBar draws "[####    ] 12/40 cancel" on one line of w, redrawn
// in place. Its methods do nothing on a nil bar, so callers need not
// check whether one is drawn.
type progressBar struct {
	w     io.Writer
	label string
	last  int
	// open is true while the line is drawn and not yet ended.
	open bool
}

const barWidth = 30

func (p *progressBar) update(done, total int) {
	if p == nil || total <= 0 {
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
	p.open = true
	if done == total {
		p.finish()
	}
}

// clear ends the drawn line so other output starts on a line of its own;
// the next update draws the bar again.
func (p *progressBar) clear() {
	if p != nil && p.open {
		p.finish()
		p.last = -1
	}
}

// finish ends the drawn line.
func (p *progressBar) finish() {
	if p != nil && p.open {
		fmt.Fprintln(p.w)
		p.open = false
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
