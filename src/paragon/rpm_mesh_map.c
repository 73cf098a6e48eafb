#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "paragon/rpm_mesh_map.h"

#define CSV_MAGIC "# papi-heritage mesh"

static uint64_t at(const uint64_t *a, unsigned node, int dir)
{
	return a ? a[node * RPM_NDIRS + dir] : 0;
}

static const char *routing_name(enum rpm_routing r)
{
	return r == RPM_ROUTE_YX ? "yx" : "xy";
}

int rpm_mesh_map_csv(FILE *f, const struct rpm_mesh_map *m)
{
	unsigned n = m->shape.rows * m->shape.cols;
	fprintf(f, CSV_MAGIC " %ux%u routing %s ranks %u\n", m->shape.rows, m->shape.cols, routing_name(m->shape.routing),
	        m->ranks);
	fprintf(f, "# bytes leaving each router towards north (row-1), south (row+1), east (col+1), west (col-1)\n");
	fprintf(f, "# p2p: %s\n# coll: %s\n", m->p2p_source ? m->p2p_source : "", m->coll_source ? m->coll_source : "");
	fprintf(f, "router,row,col,rank,north,south,east,west,coll_north,coll_south,coll_east,coll_west\n");
	for (unsigned r = 0; r < n; r++) {
		fprintf(f, "%u,%u,%u,", r, r / m->shape.cols, r % m->shape.cols);
		if (r < m->ranks)
			fprintf(f, "%u", r);
		for (int d = 0; d < RPM_NDIRS; d++)
			fprintf(f, ",%" PRIu64, at(m->p2p, r, d));
		for (int d = 0; d < RPM_NDIRS; d++)
			fprintf(f, ",%" PRIu64, at(m->coll, r, d));
		fputc('\n', f);
	}
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

static void json_string(FILE *f, const char *s)
{
	fputc('"', f);
	for (; s && *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			fprintf(f, "\\u%04x", (unsigned char)*s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* The neighbour of router r in direction d, or -1 at the mesh's edge. */
static int neighbour(const struct rpm_mesh_shape *s, unsigned r, int d)
{
	unsigned row = r / s->cols, col = r % s->cols;
	switch (d) {
	case RPM_DIR_NORTH: return row > 0 ? (int)(r - s->cols) : -1;
	case RPM_DIR_SOUTH: return row + 1 < s->rows ? (int)(r + s->cols) : -1;
	case RPM_DIR_EAST: return col + 1 < s->cols ? (int)(r + 1) : -1;
	default: return col > 0 ? (int)(r - 1) : -1;
	}
}

int rpm_mesh_map_json(FILE *f, const struct rpm_mesh_map *m)
{
	unsigned n = m->shape.rows * m->shape.cols;
	fprintf(f, "{\n  \"rows\": %u, \"cols\": %u, \"routing\": \"%s\", \"ranks\": %u, \"units\": \"bytes\",\n",
	        m->shape.rows, m->shape.cols, routing_name(m->shape.routing), m->ranks);
	fprintf(f, "  \"direction\": \"bytes leaving the router towards north (row-1), south (row+1), east (col+1), west (col-1)\",\n");
	fprintf(f, "  \"p2p_source\": ");
	json_string(f, m->p2p_source);
	fprintf(f, ",\n  \"coll_source\": ");
	json_string(f, m->coll_source);
	fprintf(f, ",\n  \"routers\": [\n");
	for (unsigned r = 0; r < n; r++) {
		fprintf(f, "    {\"router\": %u, \"row\": %u, \"col\": %u, \"rank\": ", r, r / m->shape.cols, r % m->shape.cols);
		if (r < m->ranks)
			fprintf(f, "%u", r);
		else
			fprintf(f, "null");
		for (int d = 0; d < RPM_NDIRS; d++)
			fprintf(f, ", \"%s\": %" PRIu64, rpm_dir_name((enum rpm_dir)d), at(m->p2p, r, d));
		for (int d = 0; d < RPM_NDIRS; d++)
			fprintf(f, ", \"coll_%s\": %" PRIu64, rpm_dir_name((enum rpm_dir)d), at(m->coll, r, d));
		fprintf(f, "}%s\n", r + 1 < n ? "," : "");
	}
	fprintf(f, "  ],\n  \"links\": [\n");
	int first = 1;
	for (unsigned r = 0; r < n; r++)
		for (int d = 0; d < RPM_NDIRS; d++) {
			int to = neighbour(&m->shape, r, d);
			if (to < 0)
				continue;
			fprintf(f, "%s    {\"from\": %u, \"to\": %d, \"dir\": \"%s\", \"bytes\": %" PRIu64 ", \"coll_bytes\": %" PRIu64 "}",
			        first ? "" : ",\n", r, to, rpm_dir_name((enum rpm_dir)d), at(m->p2p, r, d), at(m->coll, r, d));
			first = 0;
		}
	fprintf(f, "\n  ]\n}\n");
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ---- SVG ------------------------------------------------------------------ */

#define CELL 110 /* router square, px */
#define GAP 90   /* link length between squares */
#define MARGIN 40
#define TOP 76   /* title */
#define LEGEND 60

/* Cold to hot as a machine room's utilisation maps draw it: an idle link
 * light grey, then yellow through orange to red at the busiest link. */
static void colour(uint64_t bytes, uint64_t max, char *out, size_t len)
{
	if (bytes == 0 || max == 0) {
		snprintf(out, len, "#d0d0d0");
		return;
	}
	double t = (double)bytes / (double)max;
	snprintf(out, len, "hsl(%d,95%%,%d%%)", (int)(55.0 * (1.0 - t) + 0.5), 50 - (int)(12.0 * t));
}

static void human(uint64_t b, char *out, size_t len)
{
	if (b >= 10ULL * 1024 * 1024)
		snprintf(out, len, "%.1f MiB", (double)b / (1024.0 * 1024.0));
	else if (b >= 10ULL * 1024)
		snprintf(out, len, "%.1f KiB", (double)b / 1024.0);
	else
		snprintf(out, len, "%" PRIu64 " B", b);
}

static void cell_xy(const struct rpm_mesh_shape *s, unsigned r, int *x, int *y)
{
	*x = MARGIN + (int)(r % s->cols) * (CELL + GAP);
	*y = TOP + (int)(r / s->cols) * (CELL + GAP);
}

/* One direction of a link: a line from (x1,y1) to (x2,y2) with an arrow head
 * at the end, its width and colour by bytes, the count beside it. */
static void arrow(FILE *f, int x1, int y1, int x2, int y2, uint64_t bytes, uint64_t coll, uint64_t max, int label_dx,
                  int label_dy, const char *anchor)
{
	char c[32], h[32];
	uint64_t total = bytes + coll;
	colour(total, max, c, sizeof c);
	double w = 2.0 + (max ? 8.0 * (double)total / (double)max : 0.0);
	int dx = (x2 > x1) - (x2 < x1), dy = (y2 > y1) - (y2 < y1);
	int hx = x2 - dx * 12, hy = y2 - dy * 12; /* where the head starts */
	fprintf(f, "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"%s\" stroke-width=\"%.1f\"/>\n", x1, y1, hx, hy,
	        c, w);
	fprintf(f, "<polygon points=\"%d,%d %d,%d %d,%d\" fill=\"%s\"/>\n", x2, y2, hx + dy * 8, hy + dx * 8,
	        hx - dy * 8, hy - dx * 8, c);
	human(total, h, sizeof h);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"%s\">%s%s</text>\n", (x1 + x2) / 2 + label_dx,
	        (y1 + y2) / 2 + label_dy, anchor, h, coll ? "*" : "");
}

int rpm_mesh_map_svg(FILE *f, const struct rpm_mesh_map *m)
{
	const struct rpm_mesh_shape *s = &m->shape;
	unsigned n = s->rows * s->cols;
	uint64_t max = 0, sum = 0, coll_sum = 0;
	for (unsigned r = 0; r < n; r++)
		for (int d = 0; d < RPM_NDIRS; d++) {
			uint64_t t = at(m->p2p, r, d) + at(m->coll, r, d);
			max = t > max ? t : max;
			sum += at(m->p2p, r, d);
			coll_sum += at(m->coll, r, d);
		}
	int width = 2 * MARGIN + (int)s->cols * CELL + (int)(s->cols - 1) * GAP;
	int height = TOP + (int)s->rows * CELL + (int)(s->rows - 1) * GAP + MARGIN + LEGEND;
	if (width < 560)
		width = 560;
	fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
	fprintf(f, "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
	           "font-family=\"DejaVu Sans, Helvetica, sans-serif\">\n", width, height, width, height);
	fprintf(f, "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n");
	fprintf(f, "<text x=\"%d\" y=\"28\" font-size=\"16\" font-weight=\"bold\">Paragon mesh %ux%u, %s routing, %u ranks</text>\n",
	        MARGIN, s->rows, s->cols, s->routing == RPM_ROUTE_YX ? "Y-then-X" : "X-then-Y", m->ranks);
	char hs[32], hc[32];
	human(sum, hs, sizeof hs);
	human(coll_sum, hc, sizeof hc);
	fprintf(f, "<text x=\"%d\" y=\"46\" font-size=\"11\">arrow: bytes leaving a router that way; all links: "
	           "point-to-point %s, collectives %s</text>\n", MARGIN, hs, hc);
	if (coll_sum)
		fprintf(f, "<text x=\"%d\" y=\"60\" font-size=\"11\">* the link's bytes include collectives, which are "
		           "modelled (papi-heritage-mpi(7))</text>\n", MARGIN);

	/* Links first, routers over them. */
	for (unsigned r = 0; r < n; r++) {
		int x, y;
		cell_xy(s, r, &x, &y);
		int cx = x + CELL / 2, cy = y + CELL / 2;
		if (neighbour(s, r, RPM_DIR_EAST) >= 0) { /* east above, west below */
			unsigned e = r + 1;
			arrow(f, x + CELL, cy - 14, x + CELL + GAP, cy - 14, at(m->p2p, r, RPM_DIR_EAST),
			      at(m->coll, r, RPM_DIR_EAST), max, 0, -10, "middle");
			arrow(f, x + CELL + GAP, cy + 14, x + CELL, cy + 14, at(m->p2p, e, RPM_DIR_WEST),
			      at(m->coll, e, RPM_DIR_WEST), max, 0, 22, "middle");
		}
		if (neighbour(s, r, RPM_DIR_SOUTH) >= 0) { /* south on the left, north on the right */
			unsigned so = r + s->cols;
			arrow(f, cx - 14, y + CELL, cx - 14, y + CELL + GAP, at(m->p2p, r, RPM_DIR_SOUTH),
			      at(m->coll, r, RPM_DIR_SOUTH), max, -8, 4, "end");
			arrow(f, cx + 14, y + CELL + GAP, cx + 14, y + CELL, at(m->p2p, so, RPM_DIR_NORTH),
			      at(m->coll, so, RPM_DIR_NORTH), max, 8, 4, "start");
		}
	}
	uint64_t max_out = 0;
	for (unsigned r = 0; r < n; r++) {
		uint64_t out = 0;
		for (int d = 0; d < RPM_NDIRS; d++)
			out += at(m->p2p, r, d) + at(m->coll, r, d);
		max_out = out > max_out ? out : max_out;
	}
	for (unsigned r = 0; r < n; r++) {
		int x, y;
		cell_xy(s, r, &x, &y);
		uint64_t out = 0;
		for (int d = 0; d < RPM_NDIRS; d++)
			out += at(m->p2p, r, d) + at(m->coll, r, d);
		char c[32], h[32];
		colour(out, max_out, c, sizeof c);
		human(out, h, sizeof h);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" rx=\"6\" fill=\"%s\" fill-opacity=\"0.25\" "
		           "stroke=\"#333\" stroke-width=\"1.5\"/>\n", x, y, CELL, CELL, c);
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"14\" font-weight=\"bold\" text-anchor=\"middle\">router %u</text>\n",
		        x + CELL / 2, y + 30, r);
		if (r < m->ranks)
			fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\">rank %u</text>\n", x + CELL / 2,
			        y + 50, r);
		else
			fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"12\" text-anchor=\"middle\" fill=\"#777\">no rank</text>\n",
			        x + CELL / 2, y + 50);
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\" text-anchor=\"middle\">out %s</text>\n", x + CELL / 2,
		        y + 75, h);
		fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"middle\" fill=\"#555\">(%u,%u)</text>\n",
		        x + CELL / 2, y + 95, r / s->cols, r % s->cols);
	}
	/* Legend: the colour scale from idle to the busiest link. */
	int ly = height - LEGEND + 10;
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"11\">link bytes:</text>\n", MARGIN, ly + 12);
	for (int i = 0; i <= 10; i++) {
		char c[32];
		colour(i == 0 ? 0 : (uint64_t)i, 10, c, sizeof c);
		fprintf(f, "<rect x=\"%d\" y=\"%d\" width=\"24\" height=\"14\" fill=\"%s\"/>\n", MARGIN + 75 + i * 26, ly, c);
	}
	char hm[32];
	human(max, hm, sizeof hm);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\">0</text>\n", MARGIN + 75, ly + 28);
	fprintf(f, "<text x=\"%d\" y=\"%d\" font-size=\"10\" text-anchor=\"end\">%s</text>\n", MARGIN + 75 + 11 * 26 - 2,
	        ly + 28, hm);
	fprintf(f, "</svg>\n");
	return fflush(f) == 0 && !ferror(f) ? 0 : -1;
}

/* ---- reading the CSV back ------------------------------------------------- */

int rpm_mesh_map_read_csv(FILE *f, struct rpm_mesh_shape *shape, unsigned *ranks, uint64_t *p2p, uint64_t *coll,
                          char *why, size_t whylen)
{
	char line[1024], routing[8];
	unsigned rows, cols, lineno = 1;
	if (!fgets(line, sizeof line, f) ||
	    sscanf(line, CSV_MAGIC " %ux%u routing %7s ranks %u", &rows, &cols, routing, ranks) != 4) {
		snprintf(why, whylen, "line 1: not a papi-heritage mesh CSV (\"" CSV_MAGIC " RxC routing xy ranks N\" expected)");
		return -1;
	}
	char shape_s[32];
	snprintf(shape_s, sizeof shape_s, "%ux%u", rows, cols);
	if (rpm_mesh_parse_shape(shape_s, shape) != 0 || rpm_mesh_parse_routing(routing, &shape->routing) != 0) {
		snprintf(why, whylen, "line 1: bad shape %s or routing %s", shape_s, routing);
		return -1;
	}
	unsigned n = rows * cols, seen = 0;
	memset(p2p, 0, (size_t)n * RPM_NDIRS * sizeof *p2p);
	memset(coll, 0, (size_t)n * RPM_NDIRS * sizeof *coll);
	while (fgets(line, sizeof line, f)) {
		lineno++;
		if (line[0] == '#' || strncmp(line, "router,", 7) == 0 || line[0] == '\n')
			continue;
		unsigned r, row, col;
		uint64_t v[8];
		char rank[16];
		/* The rank field may be empty (a router without a process). */
		if (sscanf(line, "%u,%u,%u,%15[0-9]", &r, &row, &col, rank) < 3) {
			snprintf(why, whylen, "line %u: router,row,col,... expected", lineno);
			return -1;
		}
		const char *p = line;
		for (int i = 0; i < 4; i++)
			p = strchr(p, ',') + 1; /* sscanf saw three commas at least */
		for (int i = 0; i < 8; i++) {
			char *end;
			errno = 0;
			v[i] = strtoull(p, &end, 10);
			if (end == p || errno || (i < 7 ? *end != ',' : (*end != '\n' && *end != 0))) {
				snprintf(why, whylen, "line %u: 8 byte counts expected after router,row,col,rank", lineno);
				return -1;
			}
			p = end + 1;
		}
		if (r >= n || row != r / cols || col != r % cols) {
			snprintf(why, whylen, "line %u: router %u at (%u,%u) is not on the %ux%u mesh", lineno, r, row, col, rows,
			         cols);
			return -1;
		}
		for (int d = 0; d < RPM_NDIRS; d++) {
			p2p[r * RPM_NDIRS + d] = v[d];
			coll[r * RPM_NDIRS + d] = v[4 + d];
		}
		seen++;
	}
	if (seen != n) {
		snprintf(why, whylen, "%u routers listed, the %ux%u mesh has %u", seen, rows, cols, n);
		return -1;
	}
	return 0;
}
