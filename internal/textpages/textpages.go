// Package textpages unmaps the executable's read-only pages from the process so that only the
// ones it goes on using are resident.
//
// A Go binary's code and read-only data are mapped from its file. Start-up touches pages all
// over them (every package's init, the configuration and migration code, the tables of
// packages a request may never reach), and the kernel maps each fault's neighbours too
// (fault-around, 64 KiB by default): the gateway's 28 MB binary was 20 MiB resident a second
// after start, of which an idle gateway with every channel connected uses about 5 MiB again.
// Release drops the mapping of those pages; the pages stay in the page cache, and the ones the
// process touches again come back on a minor fault (no disk read while the page cache holds
// them). What is no longer mapped is what the kernel reclaims first under memory pressure,
// instead of being counted against the process.
//
// Only a mapping that no write ever reached is released: not writable, and no page of it a
// private copy (smaps' Anonymous: 0 kB). A position-independent binary's relocated read-only
// data (RELRO) is such a copy and is kept, since dropping it would bring back the unrelocated
// file contents.
package textpages

// Stats says what one Release did.
type Stats struct {
	Mappings int   // mappings of the executable released
	Bytes    int64 // their resident bytes before the release
}
