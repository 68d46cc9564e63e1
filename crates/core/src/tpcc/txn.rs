//! The five transactions' inputs (clause 2), BenchmarkSQL's terminals and its mix
//! (`TpccMix`), and the driver that draws them per terminal.

use rand_core::Rng;
use rand_xoshiro::Xoshiro256PlusPlus;

use super::random::{NurandC, last_name, nurand, uniform};
use super::schema::{CUSTOMERS_PER_DISTRICT, DISTRICTS, ITEMS, MAX_ORDER_LINES, MIN_ORDER_LINES};

// ---------------------------------------------------------------------------
// Transactions (clause 2, BenchmarkSQL's jTPCCTData and jTPCCTerminal)

/// The five transactions, in the order of the runner's kinds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TpccKind {
    /// New-Order (2.4).
    NewOrder = 0,
    /// Payment (2.5).
    Payment = 1,
    /// Order-Status (2.6).
    OrderStatus = 2,
    /// Delivery (2.7), run inline by the terminal as BenchmarkSQL 5.x does.
    Delivery = 3,
    /// Stock-Level (2.8).
    StockLevel = 4,
}

impl TpccKind {
    /// All five, in kind-index order.
    pub const ALL: [TpccKind; 5] = [
        TpccKind::NewOrder,
        TpccKind::Payment,
        TpccKind::OrderStatus,
        TpccKind::Delivery,
        TpccKind::StockLevel,
    ];

    /// The name reported per kind.
    pub fn name(self) -> &'static str {
        match self {
            TpccKind::NewOrder => "new_order",
            TpccKind::Payment => "payment",
            TpccKind::OrderStatus => "order_status",
            TpccKind::Delivery => "delivery",
            TpccKind::StockLevel => "stock_level",
        }
    }
}

/// The transaction mix in percent. As in BenchmarkSQL 5.x, `new_order` is
/// never drawn directly: it is what the other four leave.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TpccMix {
    /// New-Order %.
    pub new_order: f64,
    /// Payment %.
    pub payment: f64,
    /// Order-Status %.
    pub order_status: f64,
    /// Delivery %.
    pub delivery: f64,
    /// Stock-Level %.
    pub stock_level: f64,
}

impl Default for TpccMix {
    /// BenchmarkSQL 5.x's sample properties ("pre-5.1 defaults"): 45/43/4/4/4.
    fn default() -> Self {
        TpccMix {
            new_order: 45.0,
            payment: 43.0,
            order_status: 4.0,
            delivery: 4.0,
            stock_level: 4.0,
        }
    }
}

impl TpccMix {
    /// The mix with New-Order taking what the other four leave.
    pub fn from_others(
        payment: f64,
        order_status: f64,
        delivery: f64,
        stock_level: f64,
    ) -> Result<TpccMix, String> {
        let rest = 100.0 - (payment + order_status + delivery + stock_level);
        let m = TpccMix {
            // Rounding must not make a mix whose four shares fill 100% invalid.
            new_order: if rest < 0.0 && rest > -1e-9 {
                0.0
            } else {
                rest
            },
            payment,
            order_status,
            delivery,
            stock_level,
        };
        m.validate().map(|_| m)
    }

    /// No share negative, the four others at most 100%, and `new_order`
    /// their remainder (within 0.01, so a disagreeing value is reported, not ignored).
    pub fn validate(&self) -> Result<(), String> {
        let all = [
            self.new_order,
            self.payment,
            self.order_status,
            self.delivery,
            self.stock_level,
        ];
        if all.iter().any(|p| !p.is_finite() || *p < 0.0) {
            return Err(format!(
                "transaction mix percentages must be 0 or more: {self:?}"
            ));
        }
        let others = self.payment + self.order_status + self.delivery + self.stock_level;
        if others > 100.0 + 1e-9 {
            return Err(format!(
                "payment, order-status, delivery and stock-level add up to {others}%, more than 100%"
            ));
        }
        if (100.0 - others - self.new_order).abs() > 0.01 {
            return Err(format!(
                "new-order is what the other four leave ({:.2}%), not {}%",
                100.0 - others,
                self.new_order
            ));
        }
        Ok(())
    }

    /// The share of `kind`, %.
    pub fn share(&self, kind: TpccKind) -> f64 {
        match kind {
            TpccKind::NewOrder => self.new_order,
            TpccKind::Payment => self.payment,
            TpccKind::OrderStatus => self.order_status,
            TpccKind::Delivery => self.delivery,
            TpccKind::StockLevel => self.stock_level,
        }
    }

    /// Draws the next transaction in BenchmarkSQL's order of comparison:
    /// payment, stock-level, order-status, delivery, else new-order.
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> TpccKind {
        const ORDER: [TpccKind; 5] = [
            TpccKind::Payment,
            TpccKind::StockLevel,
            TpccKind::OrderStatus,
            TpccKind::Delivery,
            TpccKind::NewOrder,
        ];
        let total: f64 = ORDER.iter().map(|k| self.share(*k)).sum();
        let x = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 * total;
        let mut edge = 0.0;
        for kind in ORDER {
            edge += self.share(kind);
            if x < edge {
                return kind;
            }
        }
        // Rounding at the top edge: the last kind with a share.
        ORDER
            .into_iter()
            .rev()
            .find(|k| self.share(*k) > 0.0)
            .unwrap_or(TpccKind::NewOrder)
    }
}

/// A terminal's home: its warehouse for every transaction and its district
/// for Stock-Level (BenchmarkSQL 5.x binds both per terminal).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Terminal {
    /// Home warehouse.
    pub w_id: u32,
    /// District of its Stock-Level transactions.
    pub d_id: u32,
}

impl Terminal {
    /// Terminal `i` (from 0): warehouse (i mod W) + 1, district (i / W mod 10) + 1,
    /// so the first 10·W terminals have distinct (warehouse, district) pairs,
    /// as BenchmarkSQL's assignment guarantees.
    pub fn nth(i: u32, warehouses: u32) -> Terminal {
        let w = warehouses.max(1);
        Terminal {
            w_id: i % w + 1,
            d_id: (i / w) % DISTRICTS + 1,
        }
    }
}

/// How a transaction names its customer (60% by last name in Payment and Order-Status).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CustomerRef {
    /// By c_id, NURand(1023, 1, 3000).
    Id(u32),
    /// By c_last, the syllables of NURand(255, 0, 999).
    LastName(String),
}

/// One New-Order line's input.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderLineInput {
    /// Item, NURand(8191, 1, 100000); an unused id in the rolled-back 1%.
    pub i_id: u32,
    /// Supplying warehouse: home, or 1% another one when there are several.
    pub supply_w_id: u32,
    /// Quantity, 1..10.
    pub quantity: u32,
}

/// New-Order's input (2.4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewOrderInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// Customer, NURand(1023, 1, 3000).
    pub c_id: u32,
    /// 5–15 lines in input order.
    pub lines: Vec<OrderLineInput>,
    /// The last line names an unused item: the transaction must roll back.
    pub rollback: bool,
}

impl NewOrderInput {
    /// The lines in BenchmarkSQL's processing order, by (supply warehouse,
    /// item), so concurrent New-Orders lock stock rows in one order and
    /// cannot deadlock; order-line numbers follow this order.
    pub fn lock_order(&self) -> Vec<OrderLineInput> {
        let mut l = self.lines.clone();
        l.sort_by_key(|x| (x.supply_w_id, x.i_id));
        l
    }
}

/// Payment's input (2.5.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PaymentInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// Customer's warehouse: home, or 15% a remote one when there are several.
    pub c_w_id: u32,
    /// Customer's district: d_id, or random for a remote customer.
    pub c_d_id: u32,
    /// The customer.
    pub customer: CustomerRef,
    /// Amount in cents, 100..500000 (1.00..5000.00).
    pub amount_cents: u32,
}

/// Order-Status's input (2.6.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderStatusInput {
    /// Home warehouse.
    pub w_id: u32,
    /// District, uniform 1..10.
    pub d_id: u32,
    /// The customer.
    pub customer: CustomerRef,
}

/// Delivery's input (2.7.1): all ten districts of the home warehouse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeliveryInput {
    /// Home warehouse.
    pub w_id: u32,
    /// Carrier, 1..10.
    pub carrier_id: u32,
}

/// Stock-Level's input (2.8.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StockLevelInput {
    /// Home warehouse.
    pub w_id: u32,
    /// The terminal's district.
    pub d_id: u32,
    /// Threshold, 10..20.
    pub threshold: u32,
}

/// One drawn transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TpccTxn {
    /// New-Order.
    NewOrder(NewOrderInput),
    /// Payment.
    Payment(PaymentInput),
    /// Order-Status.
    OrderStatus(OrderStatusInput),
    /// Delivery.
    Delivery(DeliveryInput),
    /// Stock-Level.
    StockLevel(StockLevelInput),
}

impl TpccTxn {
    /// Which of the five.
    pub fn kind(&self) -> TpccKind {
        match self {
            TpccTxn::NewOrder(_) => TpccKind::NewOrder,
            TpccTxn::Payment(_) => TpccKind::Payment,
            TpccTxn::OrderStatus(_) => TpccKind::OrderStatus,
            TpccTxn::Delivery(_) => TpccKind::Delivery,
            TpccTxn::StockLevel(_) => TpccKind::StockLevel,
        }
    }
}

/// One terminal's transaction generator.
#[derive(Debug, Clone)]
pub struct TpccDriver {
    /// Warehouses in the database.
    pub warehouses: u32,
    /// The mix.
    pub mix: TpccMix,
    /// The run's NURand constants (the same for all terminals).
    pub c: NurandC,
    /// This terminal's home.
    pub terminal: Terminal,
}

impl TpccDriver {
    /// The next transaction: kind from the mix, then its input.
    pub fn draw(&self, rng: &mut Xoshiro256PlusPlus) -> TpccTxn {
        match self.mix.draw(rng) {
            TpccKind::NewOrder => TpccTxn::NewOrder(self.new_order(rng)),
            TpccKind::Payment => TpccTxn::Payment(self.payment(rng)),
            TpccKind::OrderStatus => TpccTxn::OrderStatus(self.order_status(rng)),
            TpccKind::Delivery => TpccTxn::Delivery(DeliveryInput {
                w_id: self.terminal.w_id,
                carrier_id: uniform(rng, 1, 10),
            }),
            TpccKind::StockLevel => TpccTxn::StockLevel(StockLevelInput {
                w_id: self.terminal.w_id,
                d_id: self.terminal.d_id,
                threshold: uniform(rng, 10, 20),
            }),
        }
    }

    fn customer_id(&self, rng: &mut Xoshiro256PlusPlus) -> u32 {
        nurand(rng, 1023, 1, CUSTOMERS_PER_DISTRICT, self.c.c_id)
    }

    /// 60% by last name, else by id.
    fn customer(&self, rng: &mut Xoshiro256PlusPlus) -> CustomerRef {
        if uniform(rng, 1, 100) <= 60 {
            CustomerRef::LastName(last_name(nurand(rng, 255, 0, 999, self.c.c_last)))
        } else {
            CustomerRef::Id(self.customer_id(rng))
        }
    }

    /// A warehouse other than `home`, uniform (needs 2 or more).
    fn other_warehouse(&self, rng: &mut Xoshiro256PlusPlus, home: u32) -> u32 {
        let w = uniform(rng, 1, self.warehouses - 1);
        if w >= home { w + 1 } else { w }
    }

    /// New-Order's input (2.4.1).
    pub fn new_order(&self, rng: &mut Xoshiro256PlusPlus) -> NewOrderInput {
        let w_id = self.terminal.w_id;
        let d_id = uniform(rng, 1, DISTRICTS);
        let c_id = self.customer_id(rng);
        let n = uniform(rng, MIN_ORDER_LINES, MAX_ORDER_LINES);
        let mut lines: Vec<OrderLineInput> = (0..n)
            .map(|_| {
                let i_id = nurand(rng, 8191, 1, ITEMS, self.c.ol_i_id);
                let supply_w_id = if self.warehouses > 1 && uniform(rng, 1, 100) == 1 {
                    self.other_warehouse(rng, w_id)
                } else {
                    w_id
                };
                OrderLineInput {
                    i_id,
                    supply_w_id,
                    quantity: uniform(rng, 1, 10),
                }
            })
            .collect();
        // 2.4.1.4: 1% name an unused item in the last line. BenchmarkSQL adds k million.
        let rollback = uniform(rng, 1, 100) == 1;
        if rollback {
            lines.last_mut().expect("5 or more lines").i_id += uniform(rng, 1, 9) * 1_000_000;
        }
        NewOrderInput {
            w_id,
            d_id,
            c_id,
            lines,
            rollback,
        }
    }

    /// Payment's input (2.5.1).
    pub fn payment(&self, rng: &mut Xoshiro256PlusPlus) -> PaymentInput {
        let w_id = self.terminal.w_id;
        let d_id = uniform(rng, 1, DISTRICTS);
        let (mut c_w_id, mut c_d_id) = (w_id, d_id);
        if self.warehouses > 1 && uniform(rng, 1, 100) > 85 {
            c_d_id = uniform(rng, 1, DISTRICTS);
            c_w_id = self.other_warehouse(rng, w_id);
        }
        let customer = self.customer(rng);
        PaymentInput {
            w_id,
            d_id,
            c_w_id,
            c_d_id,
            customer,
            amount_cents: uniform(rng, 100, 500_000),
        }
    }

    /// Order-Status's input (2.6.1).
    pub fn order_status(&self, rng: &mut Xoshiro256PlusPlus) -> OrderStatusInput {
        let d_id = uniform(rng, 1, DISTRICTS);
        OrderStatusInput {
            w_id: self.terminal.w_id,
            d_id,
            customer: self.customer(rng),
        }
    }
}
