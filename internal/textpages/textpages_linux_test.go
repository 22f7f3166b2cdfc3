package textpages

import (
	"os"
	"strings"
	"testing"
)

// A PIE binary's smaps: text, rodata, relocated read-only data (a private copy), data, heap, a
// library, and a path with a space.
const fixture = `555555554000-555555600000 r-xp 00000000 08:01 1234                       /opt/echo gate/bin/echogate
Size:                688 kB
Rss:                 640 kB
Anonymous:             0 kB
VmFlags: rd ex mr mw me dw
555555600000-555555700000 r--p 000ac000 08:01 1234                       /opt/echo gate/bin/echogate
Rss:                 512 kB
Anonymous:             0 kB
555555700000-555555710000 r--p 001ac000 08:01 1234                       /opt/echo gate/bin/echogate
Rss:                  64 kB
Anonymous:            64 kB
555555710000-555555720000 rw-p 001bc000 08:01 1234                       /opt/echo gate/bin/echogate
Rss:                  64 kB
Anonymous:            12 kB
555555720000-555555730000 r--p 001cc000 08:01 1234                       /opt/echo gate/bin/echogate
Rss:                   0 kB
Anonymous:             0 kB
555555730000-555555750000 rw-p 00000000 00:00 0                          [heap]
Rss:                 128 kB
Anonymous:           128 kB
7ffff7d00000-7ffff7e00000 r-xp 00000000 08:01 99                         /usr/lib/libc.so.6
Rss:                 900 kB
Anonymous:             0 kB
7ffff7f00000-7ffff7f10000 rw-p 00000000 00:00 0
Rss:                  12 kB
Anonymous:            12 kB
`

func TestParseSmapsAndReleasable(t *testing.T) {
	maps, err := parseSmaps(strings.NewReader(fixture))
	if err != nil {
		t.Fatal(err)
	}
	if len(maps) != 8 {
		t.Fatalf("parsed %d mappings, want 8: %+v", len(maps), maps)
	}
	if m := maps[0]; m.path != "/opt/echo gate/bin/echogate" || m.perms != "r-xp" || m.rss != 640<<10 || m.anon != 0 || m.start != 0x555555554000 || m.end != 0x555555600000 {
		t.Fatalf("first mapping = %+v", m)
	}
	if maps[7].path != "" {
		t.Errorf("anonymous mapping's path = %q, want empty", maps[7].path)
	}
	got := releasable(maps, 0x555555560000)
	if len(got) != 2 || got[0].perms != "r-xp" || got[1].start != 0x555555600000 {
		t.Fatalf("releasable = %+v, want the text and the untouched rodata only (not the relocated copy, the data, the empty mapping, the heap or libc)", got)
	}
	if got := releasable(maps, 0x555555735000); got != nil {
		t.Errorf("code in the heap: releasable = %+v, want none", got)
	}
	if got := releasable(maps, 0x1000); got != nil {
		t.Errorf("pc in no mapping: releasable = %+v, want none", got)
	}
}

func TestParseSmapsRejectsGarbage(t *testing.T) {
	for _, in := range []string{
		"Rss: 4 kB\n",                   // a field before any mapping
		"zzzz-0000 r-xp 0 0 0 /x\n",     // not hex
		"5000-4000 r-xp 0 08:01 1 /x\n", // end before start
		"55550000 r-xp 0 08:01 1 /x\n",  // no range
		"5000-6000 r-xp\n",              // too few fields
	} {
		if _, err := parseSmaps(strings.NewReader(in)); err == nil {
			t.Errorf("parseSmaps(%q) = nil error", in)
		}
	}
}

// TestReleaseDropsResidentText: on this test binary, Release unmaps resident text, the text
// resident afterwards is less than before, and the code keeps running (it faults back).
func TestReleaseDropsResidentText(t *testing.T) {
	before := textRSS(t)
	st, err := Release()
	if err != nil {
		t.Fatal(err)
	}
	if st.Mappings == 0 || st.Bytes == 0 {
		t.Fatalf("Release = %+v, want the test binary's text released", st)
	}
	after := textRSS(t)
	if after >= before {
		t.Fatalf("resident text %d bytes before, %d after Release", before, after)
	}
	// Everything still works: run code all over the binary again.
	if _, err := parseSmaps(strings.NewReader(fixture)); err != nil {
		t.Fatal(err)
	}
	if again, err := Release(); err != nil || again.Bytes > st.Bytes {
		t.Fatalf("second Release = %+v, %v", again, err)
	}
	t.Logf("released %d mappings, %d KiB; text resident %d → %d KiB", st.Mappings, st.Bytes>>10, before>>10, after>>10)
}

// textRSS is the resident bytes of the executable's r-x mappings.
func textRSS(t *testing.T) int64 {
	t.Helper()
	data, err := os.ReadFile("/proc/self/smaps")
	if err != nil {
		t.Fatal(err)
	}
	maps, err := parseSmaps(strings.NewReader(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, m := range maps {
		if m.path == exe && m.perms == "r-xp" {
			n += m.rss
		}
	}
	if n == 0 {
		t.Fatalf("no resident r-xp mapping of %s", exe)
	}
	return n
}
