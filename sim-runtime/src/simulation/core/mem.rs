//! Memory for what the executor reaches at random: task allocations, the
//! task slab and the run queue, kept on transparent huge pages.
//!
//! The random schedule picks any runnable task at each step, so a simulation
//! of many tasks reads its slab entry, its run-queue entry and its allocation
//! at addresses no cache has seen recently. With 4 KiB pages each such read
//! also needs an address translation the TLB does not hold: 100,000 tasks
//! span about 7,000 pages, more than the TLB's 2,048 entries. On 2 MiB pages
//! the same memory is fifteen pages. Measured (docs/perf.md): spawn_yield ran
//! 20% faster with the whole heap on huge pages, and as fast with only these
//! three on them.
//!
//! - [`alloc`]/[`dealloc`]: task allocations of up to [`MAX_BLOCK`] bytes
//!   come from per-thread free lists of 16-byte size classes, refilled from
//!   2 MiB spans mapped for the purpose (a thread's first span is 256 KiB
//!   of ordinary pages, so a small simulation holds only what it touches). A block may be freed on any thread
//!   (a waker can outlive its run on another thread): it joins that thread's
//!   list. A thread's lists and the rest of its span go to a process-wide
//!   pool when it exits, for the next thread. The memory is kept for reuse,
//!   never returned to the OS, as an allocator's arena is.
//! - [`HugeVec`]: a growable array whose buffer, once it reaches
//!   [`HUGE_MIN`] bytes, is a mapping of its own advised as huge pages;
//!   freed mappings are kept (up to 64 MiB) for the next `HugeVec`, so a
//!   runtime per seed does not fault in fresh pages every time.
//!
//! Huge pages are advice: where the kernel does not give them (THP off,
//! or not Linux) the memory is ordinary pages and everything works the same.
//! Nothing here feeds a decision of the simulation: addresses never reach
//! the schedule or the fingerprint.

use std::alloc::Layout;
use std::cell::UnsafeCell;
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::Mutex;

/// The size of a huge page, and of every mapping made here.
const HUGE: usize = 2 << 20;
/// Size classes are multiples of this (and so is every block's alignment).
const GRAIN: usize = 16;
/// The largest block served from the free lists; larger allocations (or
/// ones aligned to more than [`GRAIN`]) go to the global allocator.
pub(crate) const MAX_BLOCK: usize = 1024;
const CLASSES: usize = MAX_BLOCK / GRAIN;
/// A thread's first span: ordinary pages (see `Lists::mapped`).
const FIRST_SPAN: usize = 256 << 10;
/// A [`HugeVec`] moves to a mapping of its own from this many bytes on.
pub(crate) const HUGE_MIN: usize = 1 << 20;

/// Maps `len` bytes: if `huge`, a multiple of [`HUGE`] at a
/// [`HUGE`]-aligned address, advised as huge pages; otherwise whole
/// ordinary pages. Aborts, as the global allocator does, if the system has
/// no memory left.
fn map(len: usize, huge: bool) -> NonNull<u8> {
    debug_assert!(len % if huge { HUGE } else { 4096 } == 0);
    // Over-map by one huge page and trim, so the start is aligned (a huge
    // page backs only an aligned 2 MiB range).
    let over = if huge { len + HUGE } else { len };
    // SAFETY: an anonymous private mapping at an address of the kernel's
    // choosing; no existing memory is affected.
    let raw = unsafe {
        libc::mmap(
            std::ptr::null_mut(),
            over,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if raw == libc::MAP_FAILED {
        std::alloc::handle_alloc_error(Layout::from_size_align(len, HUGE).expect("valid layout"));
    }
    let raw = raw as usize;
    let start = if huge {
        (raw + HUGE - 1) & !(HUGE - 1)
    } else {
        raw
    };
    // SAFETY: both ranges lie inside the mapping just made, outside
    // [start, start + len).
    unsafe {
        if start > raw {
            libc::munmap(raw as *mut libc::c_void, start - raw);
        }
        let tail = raw + over - (start + len);
        if tail > 0 {
            libc::munmap((start + len) as *mut libc::c_void, tail);
        }
    }
    #[cfg(target_os = "linux")]
    if huge {
        // SAFETY: advice on memory this function owns; a failure (THP
        // compiled out) leaves ordinary pages.
        unsafe {
            libc::madvise(start as *mut libc::c_void, len, libc::MADV_HUGEPAGE);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = huge;
    // SAFETY: inside a successful mapping, so not null.
    unsafe { NonNull::new_unchecked(start as *mut u8) }
}

/// # Safety
/// `ptr`, `len` are a mapping made by [`map`], no longer used.
unsafe fn unmap(ptr: NonNull<u8>, len: usize) {
    // SAFETY: as the caller promises.
    unsafe { libc::munmap(ptr.as_ptr().cast(), len) };
}

/// Mappings [`HugeVec`]s let go of, `(address, length)`, kept for the next
/// ones: a fresh mapping's pages are zeroed by the kernel at first touch,
/// 2 MiB at a time, which a runtime per seed (or per bench run) would
/// otherwise pay for its slab and run queue every time (9% of spawn_yield
/// in perf, in `clear_page`). At most [`SPARE_MAX`] bytes are kept.
static SPARE: Mutex<Vec<(usize, usize)>> = Mutex::new(Vec::new());
const SPARE_MAX: usize = 64 << 20;

fn spare() -> std::sync::MutexGuard<'static, Vec<(usize, usize)>> {
    SPARE.lock().unwrap_or_else(|e| e.into_inner())
}

/// A mapping of `len` bytes: a kept one of that length, or a new one.
fn map_reusing(len: usize) -> NonNull<u8> {
    let kept = {
        let mut spare = spare();
        let i = spare.iter().position(|&(_, l)| l == len);
        i.map(|i| spare.swap_remove(i).0)
    };
    match kept {
        // SAFETY: a mapping made by `map`, unused since it was kept.
        Some(addr) => unsafe { NonNull::new_unchecked(addr as *mut u8) },
        None => map(len, true),
    }
}

/// # Safety
/// As [`unmap`].
unsafe fn unmap_keeping(ptr: NonNull<u8>, len: usize) {
    {
        let mut spare = spare();
        if spare.iter().map(|&(_, l)| l).sum::<usize>() + len <= SPARE_MAX {
            spare.push((ptr.as_ptr() as usize, len));
            return;
        }
    }
    // SAFETY: as the caller promises.
    unsafe { unmap(ptr, len) };
}

/// The free-list class of a layout, if the lists serve it.
#[inline]
fn class(layout: Layout) -> Option<usize> {
    if layout.size() <= MAX_BLOCK && layout.align() <= GRAIN && layout.size() > 0 {
        Some((layout.size() - 1) / GRAIN)
    } else {
        None
    }
}

/// A free block's first word: the next free block of its class.
struct Free {
    next: *mut Free,
}

/// Free lists and a span to carve from.
struct Lists {
    head: [*mut Free; CLASSES],
    /// The last block of each list (valid while its head is not null), so
    /// a whole list joins another in one step.
    tail: [*mut Free; CLASSES],
    /// The span blocks are carved from: `[next, end)`.
    next: usize,
    end: usize,
    /// How many spans this thread has mapped. Its first is [`FIRST_SPAN`]
    /// bytes of ordinary pages: a thread that runs a small simulation then
    /// holds only the pages it touched (a huge page is 2 MiB of memory at
    /// first touch); only one that needs more maps huge spans.
    mapped: u32,
}

impl Lists {
    const EMPTY: Lists = Lists {
        head: [std::ptr::null_mut(); CLASSES],
        tail: [std::ptr::null_mut(); CLASSES],
        next: 0,
        end: 0,
        mapped: 0,
    };

    #[inline]
    fn pop(&mut self, c: usize) -> Option<NonNull<u8>> {
        let block = NonNull::new(self.head[c])?;
        // SAFETY: a block on a free list is free memory this module wrote
        // a `Free` into.
        self.head[c] = unsafe { block.as_ref().next };
        Some(block.cast())
    }

    #[inline]
    fn push(&mut self, c: usize, block: NonNull<u8>) {
        let block = block.cast::<Free>();
        // SAFETY: the block is free, at least `GRAIN` bytes and aligned to
        // it, and nobody else refers to it.
        unsafe {
            block.as_ptr().write(Free { next: self.head[c] });
        }
        if self.head[c].is_null() {
            self.tail[c] = block.as_ptr();
        }
        self.head[c] = block.as_ptr();
    }

    /// Moves all of `other`'s blocks of class `c` onto this list.
    fn splice(&mut self, c: usize, other: &mut Lists) {
        if other.head[c].is_null() {
            return;
        }
        // SAFETY: `other.tail[c]` is the last block of a non-empty list.
        unsafe { (*other.tail[c]).next = self.head[c] };
        if self.head[c].is_null() {
            self.tail[c] = other.tail[c];
        }
        self.head[c] = other.head[c];
        other.head[c] = std::ptr::null_mut();
    }

    #[inline]
    fn carve(&mut self, size: usize) -> Option<NonNull<u8>> {
        if self.end - self.next < size {
            return None;
        }
        let block = self.next;
        self.next += size;
        NonNull::new(block as *mut u8)
    }
}

/// What exited threads left, for the next ones.
struct Pool {
    lists: Lists,
    /// Spans with room left, `(next, end)`.
    spans: Vec<(usize, usize)>,
}

// SAFETY: the pool's pointers are free memory no thread refers to; the
// mutex hands them to one thread at a time.
unsafe impl Send for Pool {}

static POOL: Mutex<Pool> = Mutex::new(Pool {
    lists: Lists::EMPTY,
    spans: Vec::new(),
});

fn pool() -> std::sync::MutexGuard<'static, Pool> {
    // The pool's state is consistent at every point a panic could leave it.
    POOL.lock().unwrap_or_else(|e| e.into_inner())
}

/// A thread's lists; returned to the pool when the thread exits.
struct Local(UnsafeCell<Lists>);

impl Drop for Local {
    fn drop(&mut self) {
        let lists = self.0.get_mut();
        let mut pool = pool();
        for c in 0..CLASSES {
            pool.lists.splice(c, lists);
        }
        if lists.end - lists.next >= GRAIN {
            pool.spans.push((lists.next, lists.end));
        }
    }
}

thread_local! {
    static LOCAL: Local = const { Local(UnsafeCell::new(Lists::EMPTY)) };
}

/// The thread's lists, moved out; where the thread's locals are being
/// destroyed, empty ones.
fn take_lists() -> Lists {
    LOCAL
        // SAFETY: the thread's own lists, not borrowed elsewhere.
        .try_with(|local| std::mem::replace(unsafe { &mut *local.0.get() }, Lists::EMPTY))
        .unwrap_or(Lists::EMPTY)
}

// Kept by a fresh thread's reset: free blocks and the rest of a span, no
// state of a run.
super::hooks::kept!(
    LOCAL_KEPT: Lists,
    take: take_lists,
    put: |lists: Lists| {
        let mut lists = Some(lists);
        let _ = LOCAL.try_with(|local| {
            // SAFETY: the thread's own lists, not borrowed elsewhere; the
            // empty ones a fresh reset left are replaced, never dropped
            // with blocks in them.
            unsafe { *local.0.get() = lists.take().unwrap_or(Lists::EMPTY) }
        });
        // No slot (the thread is exiting): to the pool, as its exit would.
        if let Some(lists) = lists {
            drop(Local(UnsafeCell::new(lists)));
        }
    },
);

/// Allocates a block for `layout` (at least its size, aligned as it asks).
#[inline]
pub(crate) fn alloc(layout: Layout) -> NonNull<u8> {
    let Some(c) = class(layout) else {
        return global_alloc(layout);
    };
    let size = (c + 1) * GRAIN;
    LOCAL
        .try_with(|local| {
            // SAFETY: the thread's own lists, not borrowed elsewhere (no
            // function here calls out while holding them).
            let lists = unsafe { &mut *local.0.get() };
            if let Some(b) = lists.pop(c).or_else(|| lists.carve(size)) {
                return b;
            }
            refill(lists, c, size)
        })
        .unwrap_or_else(|_| {
            // The thread is exiting: from the pool, and what the refill
            // took beyond this block goes straight back.
            let mut lists = Lists::EMPTY;
            let b = refill(&mut lists, c, size);
            drop(Local(UnsafeCell::new(lists)));
            b
        })
}

/// The thread's list of class `c` is empty and its span is spent: take the
/// pool's blocks of that class, or a span (the pool's, or a new mapping).
#[cold]
fn refill(lists: &mut Lists, c: usize, size: usize) -> NonNull<u8> {
    let mut pool = pool();
    lists.splice(c, &mut pool.lists);
    if let Some(b) = lists.pop(c) {
        return b;
    }
    // The rest of the spent span (smaller than this block) stays unused.
    if let Some((next, end)) = pool.spans.pop() {
        lists.next = next;
        lists.end = end;
        if let Some(b) = lists.carve(size) {
            return b;
        }
    }
    drop(pool);
    let (len, huge) = if lists.mapped == 0 {
        (FIRST_SPAN, false)
    } else {
        (HUGE, true)
    };
    let span = map(len, huge);
    lists.mapped += 1;
    lists.next = span.as_ptr() as usize;
    lists.end = lists.next + len;
    lists.carve(size).expect("a new span holds any block")
}

/// Frees a block [`alloc`] returned for the same `layout`.
///
/// # Safety
/// `ptr` came from `alloc(layout)` and is no longer used.
#[inline]
pub(crate) unsafe fn dealloc(ptr: NonNull<u8>, layout: Layout) {
    let Some(c) = class(layout) else {
        // SAFETY: `alloc` took this layout to the global allocator.
        unsafe { std::alloc::dealloc(ptr.as_ptr(), layout) };
        return;
    };
    if LOCAL
        .try_with(|local| {
            // SAFETY: as in `alloc`.
            unsafe { &mut *local.0.get() }.push(c, ptr);
        })
        .is_err()
    {
        pool().lists.push(c, ptr);
    }
}

fn global_alloc(layout: Layout) -> NonNull<u8> {
    // A task allocation is never zero-sized: it holds at least its header.
    assert!(layout.size() > 0, "zero-sized allocation");
    // SAFETY: a layout of non-zero size.
    let p = unsafe { std::alloc::alloc(layout) };
    NonNull::new(p).unwrap_or_else(|| std::alloc::handle_alloc_error(layout))
}

/// A growable array, as `Vec` for what the executor needs, whose buffer is
/// a huge-page mapping of its own once it reaches [`HUGE_MIN`] bytes
/// (below that, the global allocator's).
pub(crate) struct HugeVec<T> {
    ptr: NonNull<T>,
    len: usize,
    cap: usize,
}

// SAFETY: owns its elements, as `Vec<T>` does.
unsafe impl<T: Send> Send for HugeVec<T> {}

impl<T> Default for HugeVec<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T> HugeVec<T> {
    pub(crate) const fn new() -> Self {
        assert!(size_of::<T>() > 0, "HugeVec does not hold zero-sized types");
        HugeVec {
            ptr: NonNull::dangling(),
            len: 0,
            cap: 0,
        }
    }

    pub(crate) fn capacity(&self) -> usize {
        self.cap
    }

    /// Whether the buffer is a huge-page mapping.
    fn mapped(cap: usize) -> bool {
        cap * size_of::<T>() >= HUGE_MIN
    }

    /// The buffer for `cap` elements: `(bytes, layout)`; mapped buffers are
    /// whole huge pages.
    fn buffer_layout(cap: usize) -> Layout {
        let bytes = cap.checked_mul(size_of::<T>()).expect("capacity overflow");
        if Self::mapped(cap) {
            Layout::from_size_align(bytes.next_multiple_of(HUGE), HUGE).expect("valid layout")
        } else {
            Layout::array::<T>(cap).expect("capacity overflow")
        }
    }

    #[cold]
    fn grow(&mut self) {
        let mut cap = (self.cap * 2).max(8);
        let layout = Self::buffer_layout(cap);
        let ptr: NonNull<T> = if Self::mapped(cap) {
            // Use the whole mapping.
            cap = layout.size() / size_of::<T>();
            map_reusing(layout.size()).cast()
        } else {
            global_alloc(layout).cast()
        };
        // SAFETY: both buffers hold at least `len` elements and do not
        // overlap; the old one's elements are moved, not dropped.
        unsafe {
            std::ptr::copy_nonoverlapping(self.ptr.as_ptr(), ptr.as_ptr(), self.len);
            self.free_buffer();
        }
        self.ptr = ptr;
        self.cap = cap;
    }

    /// # Safety
    /// The buffer's elements were moved out or dropped.
    unsafe fn free_buffer(&mut self) {
        if self.cap == 0 {
            return;
        }
        let layout = Self::buffer_layout(self.cap);
        if Self::mapped(self.cap) {
            // SAFETY: made by `map` with this size.
            unsafe { unmap_keeping(self.ptr.cast(), layout.size()) };
        } else {
            // SAFETY: made by the global allocator with this layout.
            unsafe { std::alloc::dealloc(self.ptr.as_ptr().cast(), layout) };
        }
    }

    #[inline]
    pub(crate) fn push(&mut self, value: T) {
        if self.len == self.cap {
            self.grow();
        }
        // SAFETY: `len < cap`: a slot inside the buffer, uninitialised.
        unsafe { self.ptr.as_ptr().add(self.len).write(value) };
        self.len += 1;
    }

    /// Drops every element; the buffer stays.
    pub(crate) fn clear(&mut self) {
        let len = self.len;
        // Set first: a panicking destructor leaks the rest, never drops twice.
        self.len = 0;
        // SAFETY: the first `len` elements are initialised, and no longer
        // reachable through `self`.
        unsafe {
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(self.ptr.as_ptr(), len))
        };
    }

    /// Removes element `i`; the last one takes its place.
    #[inline]
    pub(crate) fn swap_remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "index {i} out of bounds (len {})", self.len);
        self.len -= 1;
        // SAFETY: `i` and `len` (the old last) are initialised elements; the
        // one read out is owned by the caller, the last moves into its slot.
        unsafe {
            let base = self.ptr.as_ptr();
            let v = base.add(i).read();
            if i != self.len {
                std::ptr::copy_nonoverlapping(base.add(self.len), base.add(i), 1);
            }
            v
        }
    }

    /// Removes element `i`, shifting the ones after it down.
    pub(crate) fn remove(&mut self, i: usize) -> T {
        assert!(i < self.len, "index {i} out of bounds (len {})", self.len);
        // SAFETY: `i` is initialised; the elements after it move down one.
        unsafe {
            let base = self.ptr.as_ptr();
            let v = base.add(i).read();
            std::ptr::copy(base.add(i + 1), base.add(i), self.len - i - 1);
            self.len -= 1;
            v
        }
    }

    /// Drops the first `n` elements, shifting the rest to the front.
    pub(crate) fn remove_front(&mut self, n: usize) {
        assert!(n <= self.len, "{n} is more than the length {}", self.len);
        let len = self.len;
        self.len = 0;
        // SAFETY: the first `n` are dropped, the `len - n` after them move
        // to the front (`copy` allows the overlap).
        unsafe {
            let base = self.ptr.as_ptr();
            std::ptr::drop_in_place(std::ptr::slice_from_raw_parts_mut(base, n));
            std::ptr::copy(base.add(n), base, len - n);
        }
        self.len = len - n;
    }
}

impl<T> Drop for HugeVec<T> {
    fn drop(&mut self) {
        self.clear();
        // SAFETY: no element is left.
        unsafe { self.free_buffer() };
    }
}

impl<T> Deref for HugeVec<T> {
    type Target = [T];
    #[inline]
    fn deref(&self) -> &[T] {
        // SAFETY: the first `len` elements are initialised.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl<T> DerefMut for HugeVec<T> {
    #[inline]
    fn deref_mut(&mut self) -> &mut [T] {
        // SAFETY: as `deref`, and `&mut self` is unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::rc::Rc;

    /// The same operations on a `Vec` and a `HugeVec` leave the same
    /// elements, across the move to a mapping; every element is dropped
    /// exactly once.
    #[test]
    fn huge_vec_behaves_as_a_vec() {
        let drops = Rc::new(());
        let mut h: HugeVec<(u64, Rc<()>, [u8; 48])> = HugeVec::new();
        let mut v: Vec<(u64, Rc<()>, [u8; 48])> = Vec::new();
        let mut draw = crate::simulation::core::seed::test_draws(3);
        for step in 0..60_000u64 {
            let r = draw();
            match r % 8 {
                0..=4 => {
                    h.push((step, drops.clone(), [step as u8; 48]));
                    v.push((step, drops.clone(), [step as u8; 48]));
                }
                5 if !v.is_empty() => {
                    let i = r % v.len();
                    assert_eq!(h.swap_remove(i).0, v.swap_remove(i).0);
                }
                6 if !v.is_empty() => {
                    let i = r % v.len();
                    assert_eq!(h.remove(i).0, v.remove(i).0);
                }
                7 if step % 9973 == 0 => {
                    let n = r % (v.len() / 4 + 1);
                    h.remove_front(n);
                    v.drain(..n);
                }
                _ => {}
            }
            assert_eq!(h.len(), v.len());
        }
        assert!(
            h.capacity() * size_of::<(u64, Rc<()>, [u8; 48])>() >= HUGE_MIN,
            "cap {} len {}",
            h.capacity(),
            h.len()
        );
        assert!(h.iter().map(|e| e.0).eq(v.iter().map(|e| e.0)));
        assert!(h.iter().all(|e| e.2 == [e.0 as u8; 48]));
        assert_eq!(Rc::strong_count(&drops), 1 + 2 * v.len());
        h.clear();
        assert_eq!(Rc::strong_count(&drops), 1 + v.len());
        h.push((1, drops.clone(), [0; 48]));
        drop(h);
        drop(v);
        assert_eq!(Rc::strong_count(&drops), 1);
    }

    /// Blocks of every class come back distinct, writable, aligned, and
    /// are reused once freed; blocks freed on another thread are reused
    /// too, and larger layouts go to the global allocator.
    #[test]
    fn blocks_are_distinct_and_reused() {
        let mut live: Vec<(NonNull<u8>, Layout)> = Vec::new();
        for size in [1, 15, 16, 17, 100, 280, 1000, 1024, 1025, 5000] {
            for _ in 0..100 {
                let layout = Layout::from_size_align(size, 8).unwrap();
                let p = alloc(layout);
                assert_eq!(p.as_ptr() as usize % 8, 0);
                // SAFETY: a fresh block of `size` bytes.
                unsafe { std::ptr::write_bytes(p.as_ptr(), size as u8, size) };
                live.push((p, layout));
            }
        }
        let mut starts: Vec<usize> = live.iter().map(|(p, _)| p.as_ptr() as usize).collect();
        starts.sort_unstable();
        starts.dedup();
        assert_eq!(starts.len(), live.len(), "two live blocks share an address");
        for (p, l) in &live {
            // SAFETY: each block still holds what was written to it.
            let bytes = unsafe { std::slice::from_raw_parts(p.as_ptr(), l.size()) };
            assert!(bytes.iter().all(|&b| b == l.size() as u8), "blocks overlap");
        }
        let layout = Layout::from_size_align(280, 8).unwrap();
        let (p, _) = live.iter().copied().find(|(_, l)| *l == layout).unwrap();
        live.retain(|(q, _)| *q != p);
        // SAFETY: allocated above with this layout, no longer used.
        unsafe { dealloc(p, layout) };
        assert_eq!(alloc(layout), p, "a freed block is reused first");
        live.push((p, layout));
        // Free everything on another thread, whose lists go to the pool.
        let addrs: Vec<(usize, Layout)> = live
            .iter()
            .map(|(p, l)| (p.as_ptr() as usize, *l))
            .collect();
        std::thread::spawn(move || {
            for (a, l) in addrs {
                // SAFETY: as above; the block is not used by the other thread.
                unsafe { dealloc(NonNull::new(a as *mut u8).unwrap(), l) };
            }
        })
        .join()
        .unwrap();
    }
}
