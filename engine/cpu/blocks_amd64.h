// Macros that the GGUF block kernels (blocks_i8_amd64.s) and their
// panel kernels (blocks_panel_amd64.s) share.

// UNPACKK sets X5 to the eight scales' bytes, then the eight mins', of
// the twelve scale bytes in X4.
#define UNPACKK \
	VPSHUFD $0x98, X4, X5 \
	VPSRLVD ·kScaleShift(SB), X5, X5 \
	VPAND ·kScaleMaskA(SB), X5, X5 \
	VPSHUFD $0x50, X4, X6 \
	VPSRLD $2, X6, X6 \
	VPAND ·kScaleMaskB(SB), X6, X6 \
	VPOR X6, X5, X5
