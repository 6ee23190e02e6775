// SPDX-License-Identifier: GPL-2.0-only
// The XArray's normal API (lib/xarray.c) over an ordered map: one map per
// array, made by the first store and freed when the last entry goes, so
// that an empty array holds nothing (xa_empty()).
#include <map>

#include <uk/linux/xarray.h>

typedef std::map<unsigned long, void *> xa_map;

static inline xa_map *xa_to_map(struct xarray *xa)
{
	return static_cast<xa_map *>(xa->xa_head);
}

void *xa_load(struct xarray *xa, unsigned long index)
{
	void *entry = NULL;
	xa_map *map;

	spin_lock(&xa->xa_lock);
	map = xa_to_map(xa);
	if (map) {
		auto it = map->find(index);

		if (it != map->end())
			entry = it->second;
	}
	spin_unlock(&xa->xa_lock);
	return entry;
}

/* Under xa_lock: removes @index and frees the map once it is empty. */
static void *__xa_erase(struct xarray *xa, unsigned long index)
{
	xa_map *map = xa_to_map(xa);
	void *entry;

	if (!map)
		return NULL;
	auto it = map->find(index);
	if (it == map->end())
		return NULL;
	entry = it->second;
	map->erase(it);
	if (map->empty()) {
		delete map;
		xa->xa_head = NULL;
	}
	return entry;
}

void *xa_store(struct xarray *xa, unsigned long index, void *entry, gfp_t gfp)
{
	void *curr = NULL;
	xa_map *map;

	spin_lock(&xa->xa_lock);
	if (!entry) {
		curr = __xa_erase(xa, index);
		spin_unlock(&xa->xa_lock);
		return curr;
	}
	map = xa_to_map(xa);
	if (!map) {
		map = new xa_map;
		xa->xa_head = map;
	}
	auto [it, inserted] = map->emplace(index, entry);
	if (!inserted) {
		curr = it->second;
		it->second = entry;
	}
	spin_unlock(&xa->xa_lock);
	return curr;
}

void *xa_erase(struct xarray *xa, unsigned long index)
{
	void *entry;

	spin_lock(&xa->xa_lock);
	entry = __xa_erase(xa, index);
	spin_unlock(&xa->xa_lock);
	return entry;
}

void xa_destroy(struct xarray *xa)
{
	spin_lock(&xa->xa_lock);
	delete xa_to_map(xa);
	xa->xa_head = NULL;
	spin_unlock(&xa->xa_lock);
}
