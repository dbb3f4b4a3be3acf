package mlxc

import (
	"debug/elf"
	"debug/macho"
	"errors"
	"strings"
)

// exportedNames lists the mlx_ functions a library file defines and
// exports, read from its dynamic symbol table (ELF) or symbol table
// (Mach-O, thin or universal).
//
// # Errors
//
// When the file is neither, or its table cannot be read.
func exportedNames(path string) ([]string, error) {
	if f, err := elf.Open(path); err == nil {
		defer f.Close()
		syms, err := f.DynamicSymbols()
		if err != nil {
			return nil, err
		}
		out := []string{} // empty, not nil: the table was read
		for _, s := range syms {
			if elf.ST_TYPE(s.Info) == elf.STT_FUNC && s.Section != elf.SHN_UNDEF && strings.HasPrefix(s.Name, "mlx_") {
				out = append(out, s.Name)
			}
		}
		return out, nil
	}
	var files []*macho.File
	if f, err := macho.Open(path); err == nil {
		defer f.Close()
		files = append(files, f)
	} else if fat, err := macho.OpenFat(path); err == nil {
		defer fat.Close()
		for _, a := range fat.Arches {
			files = append(files, a.File)
		}
	} else {
		return nil, errors.New("neither ELF nor Mach-O")
	}
	seen := map[string]bool{}
	out := []string{}
	for _, f := range files {
		if f.Symtab == nil {
			return nil, errors.New("no symbol table")
		}
		for _, s := range f.Symtab.Syms {
			const nExt, nType, nSect = 0x01, 0x0e, 0x0e
			name := strings.TrimPrefix(s.Name, "_")
			if s.Type&nExt != 0 && s.Type&nType == nSect && strings.HasPrefix(name, "mlx_") && !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	return out, nil
}
